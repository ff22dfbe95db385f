"""Where a learned SigLIP ``(scale, bias)`` sits on the sigmoid loss's phase diagram.

The theory is Lee, Chang & Sohn, "Analysis of Using Sigmoid Loss for Contrastive Learning",
AISTATS 2024, arXiv:2402.12613: for a batch of ``n`` pairs on ``d >= n`` the optimal embeddings
are a double-constant embedding (CCEM) whose structure depends on the temperature ``t`` and the
bias ``b``: the simplex ETF (``u_i = v_i``), the antipodal structure (``u_i = -v_j``) or a CCEM
in between (Theorem 2 for ``t = b``; its extension to every ``(t, b)`` is
:func:`~contrastkit.theory.sigmoid_optimum`).

Convention (the same as :func:`~contrastkit.theory.sigmoid_optimum`): ``t = scale`` and
``b = -bias`` of :func:`contrastkit.losses.siglip` (logit ``scale * cos + bias``), so SigLIP's
initialization ``scale = 10, bias = -10`` is ``t = b = 10``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import numpy as np

from contrastkit.checks.scalars import check_count, check_positive, check_real

from .sigmoid import ANTIPODAL, ETF, INTERMEDIATE, _regime, sigmoid_optimum

#: The regimes in the order of their codes in :func:`phase_regions` (``PHASE_REGIMES[code]``):
#: increasing optimal positive similarity, ``-1`` (antipodal) to ``1`` (simplex ETF).
PHASE_REGIMES: tuple[str, str, str] = (ANTIPODAL, INTERMEDIATE, ETF)
_CODES = {regime: code for code, regime in enumerate(PHASE_REGIMES)}


def phase_point(
    n: int,
    scale: float,
    bias: float,
    measured_positive: float | None = None,
    measured_negative: float | None = None,
    *,
    dim: int | None = None,
) -> dict[str, float | str]:
    r"""Where the learned ``(scale, bias)`` of SigLIP puts the optimum of a batch of ``n`` pairs.

    The record has the keys

    - ``siglip_t``, ``siglip_b``: the paper's coordinates, ``t = scale`` and ``b = -bias``;
    - ``siglip_regime``: ``"etf"``, ``"intermediate"`` or ``"antipodal"``;
    - ``siglip_predicted_pos``: the optimum's positive similarity ``u_i . v_i``;
    - ``siglip_predicted_neg``: its cross-view negative similarity ``u_i . v_j`` (``i != j``),
      ``-1/(n-1)`` at the ETF and ``-1`` antipodal;
    - ``siglip_measured_pos``, ``siglip_measured_neg``: only when ``measured_positive`` /
      ``measured_negative`` are given, the values passed (e.g. the batch's mean cosine of its
      positive and of its negative pairs) as floats, unchecked beyond being numbers (a NaN of
      a diverged batch is kept, to show as a gap in a plot);
    - ``siglip_theory_exact``: only when ``dim`` (the embedding dimension) is given, ``1.0``
      when ``dim >= n`` and ``0.0`` otherwise.

    The prediction is that of :func:`~contrastkit.theory.sigmoid_optimum` (Lee, Chang & Sohn,
    "Analysis of Using Sigmoid Loss for Contrastive Learning", AISTATS 2024, arXiv:2402.12613;
    Theorem 2 at ``t = b``, its convex one-dimensional reduction elsewhere): the global optimum
    of the loss of ``n`` pairs of free unit vectors, with ``n`` the number of pairs the loss
    compares (the global batch). It is exact only for ``d >= n``, the dimension the CCEM needs;
    for ``d < n`` (e.g. a 512-d embedding and a batch of 4096) the record still holds the
    ``d >= n`` prediction, which the paper (Remark 5) and the spec's own runs find
    qualitatively right at the two extremes but off in the intermediate regime:
    ``siglip_theory_exact`` is then ``0.0``, to read it as such.

    Raises ``ValueError`` for ``n < 2``, a ``scale`` that is not a finite number ``> 0``, a
    ``bias`` that is not finite (NaN, inf), a measured value that is not a number, or a ``dim``
    that is not an integer ``>= 1``.

    Example:
        >>> point = phase_point(8, scale=10.0, bias=-10.0)   # SigLIP's init: t = b = 10
        >>> point["siglip_t"], point["siglip_b"], point["siglip_regime"]
        (10.0, 10.0, 'etf')
        >>> point["siglip_predicted_pos"], round(point["siglip_predicted_neg"], 12)   # -1/7
        (1.0, -0.142857142857)
        >>> phase_point(8, 1.0, -1.0, 0.4, -0.3, dim=4)["siglip_theory_exact"]
        0.0
    """
    n = check_count("n", n, minimum=2)
    t = check_positive("scale", scale)
    b = -check_real("bias", bias) + 0.0  # + 0.0: bias = 0 gives b = 0.0, not -0.0
    optimum = sigmoid_optimum(n, t, b)
    point: dict[str, float | str] = {
        "siglip_t": t,
        "siglip_b": b,
        "siglip_regime": optimum.regime,
        "siglip_predicted_pos": optimum.positive_similarity,
        "siglip_predicted_neg": optimum.negative_similarity,
    }
    if measured_positive is not None:
        point["siglip_measured_pos"] = _measured("measured_positive", measured_positive)
    if measured_negative is not None:
        point["siglip_measured_neg"] = _measured("measured_negative", measured_negative)
    if dim is not None:
        point["siglip_theory_exact"] = 1.0 if check_count("dim", dim, minimum=1) >= n else 0.0
    return point


def _measured(name: str, value: float) -> float:
    """A measured similarity as a float: any real number, NaN included."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def phase_regions(n: int, t_values: Sequence[float] | np.ndarray,
                  b_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The regime of the sigmoid loss's optimum for ``n`` pairs at every ``(t, b)`` of a grid.

    Returns an integer array of shape ``(len(b_values), len(t_values))`` (rows ``b``, columns
    ``t``: the layout of ``np.meshgrid(t_values, b_values)`` and of an image with ``t`` on the
    x axis) holding codes: ``PHASE_REGIMES[code]`` is the regime, ``0`` antipodal,
    ``1`` intermediate, ``2`` simplex ETF. Each cell is decided by the very test
    :func:`~contrastkit.theory.sigmoid_optimum` applies (the sign of the reduced loss's slope
    at ``c = 1`` and ``c = -1``, without the root finding), so a cell always agrees with the
    scalar call; a 200 x 200 grid takes a few tens of milliseconds. ``t`` and ``b`` are the
    paper's (``t = scale``, ``b = -bias``) and the theory is that of ``d >= n``
    (:func:`phase_point`).

    Raises ``ValueError`` for ``n < 2``, values that are not a non-empty one-dimensional
    sequence of finite numbers, or a ``t`` that is not ``> 0``.

    Example:
        >>> codes = phase_regions(8, [0.25, 1.0, 10.0], [0.25, 1.0, 10.0])
        >>> codes.tolist()
        [[0, 1, 1], [1, 1, 1], [2, 2, 2]]
        >>> [PHASE_REGIMES[code] for code in codes.diagonal()]   # t = b: Theorem 2
        ['antipodal', 'intermediate', 'etf']
    """
    n = check_count("n", n, minimum=2)
    ts = _grid_axis("t_values", t_values)
    bs = _grid_axis("b_values", b_values)
    if not (ts > 0).all():
        raise ValueError(f"t_values must be > 0 (t = scale), got {ts[ts <= 0][0]}")
    codes = np.empty((bs.size, ts.size), dtype=np.int8)
    for row, b in enumerate(bs.tolist()):
        codes[row] = [_CODES[_regime(n, t, b)] for t in ts.tolist()]
    return codes


def _grid_axis(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}") from error
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional sequence, got shape "
                         f"{array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array[~np.isfinite(array)][0]}")
    return array
