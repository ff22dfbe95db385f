"""The optimal embeddings of the sigmoid (SigLIP) loss: Lee, Chang & Sohn (AISTATS 2024).

Convention: the papers' temperature ``t`` multiplies the similarity and their bias ``b`` enters as
``-t u.v + b`` on positives, so **``t = scale`` and ``b = -bias``** for
:func:`contrastkit.losses.siglip` (logit ``scale * cos + bias``); SigLIP's initialization
``scale = 10, bias = -10`` is ``t = b = 10``. The loss is the paper's Eq. 3 with its ``1/N``
normalization, the same as ``losses.siglip`` on a full batch of ``N`` pairs.

On ``d >= N`` the optimum lies in the CCEM (Theorem 1 / Corollary 2) at a positive similarity
``c = u_i.v_i`` with cross-view negatives ``c2(c) = ((N-2) c - N) / (2(N-1))`` (Lemma 1), so
the problem is one-dimensional.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scipy.optimize import brentq, minimize_scalar

from contrastkit.checks.scalars import check_count, check_positive, check_real

ETF, ANTIPODAL, INTERMEDIATE = "etf", "antipodal", "intermediate"
_XTOL = 1e-15


@dataclass(frozen=True)
class SigmoidThresholds:
    """Theorem 2's thresholds on ``t = b``: antipodal iff ``t <= antipodal``, ETF iff
    ``t >= etf``, in between otherwise."""

    antipodal: float
    etf: float


def sigmoid_thresholds(n: int) -> SigmoidThresholds:
    r"""The two thresholds of Theorem 2 for ``t = b`` (Fig. 2's red and blue curves):

    - antipodal (``delta* = inf``) iff ``t <= (1/2) log((N-2)/2)``;
    - simplex ETF (``delta* = 0``) iff ``t >= ((N-1)/N) log(N-3)``.

    The paper writes strict inequalities; at equality the optimum is already the boundary
    structure. Values are clipped at 0: for ``N <= 4`` the optimum is the ETF for every
    ``t > 0`` (both thresholds are 0).

    The closed forms are rounded to floats, so each is then moved by the few ulps that make it
    the exact boundary of the regime test :func:`sigmoid_optimum` applies: ``sigmoid_optimum(n,
    t, t).regime`` is ``"etf"`` exactly when ``t >= etf`` and ``"antipodal"`` exactly when
    ``t <= antipodal``, for every float ``t``.

    Example:
        >>> thresholds = sigmoid_thresholds(5)   # (1/2) log(3/2) and (4/5) log 2
        >>> round(thresholds.antipodal, 12), round(thresholds.etf, 12)
        (0.202732554054, 0.554517744448)
    """
    n = check_count("n", n, minimum=2)
    if n <= 4:
        return SigmoidThresholds(antipodal=0.0, etf=0.0)
    etf = _first_float_where(lambda t: _is_etf(n, t, t), (n - 1) / n * math.log(n - 3))
    past_antipodal = _first_float_where(
        lambda t: not _is_antipodal(n, t, t), 0.5 * math.log((n - 2) / 2)
    )
    return SigmoidThresholds(antipodal=math.nextafter(past_antipodal, 0.0), etf=etf)


def _first_float_where(holds: Callable[[float], bool], guess: float) -> float:
    """The smallest float ``t`` with ``holds(t)``, for a ``holds`` false below a boundary and true
    above it, searched ulp by ulp from ``guess`` (a closed form a few ulps off)."""
    t = guess
    if holds(t):
        while holds(below := math.nextafter(t, -math.inf)):
            t = below
        return t
    while not holds(t):
        t = math.nextafter(t, math.inf)
    return t


@dataclass(frozen=True)
class SigmoidOptimum:
    """The global optimum of the sigmoid loss for ``n`` pairs on ``d >= n`` (up to rotation).

    Attributes:
        regime: ``"etf"`` (simplex ETF, ``u_i = v_i``), ``"antipodal"`` (``u_i = -v_j`` for all
            ``i, j``) or ``"intermediate"`` (a CCEM with ``0 < delta < inf``).
        delta: the CCEM parameter ``delta*`` (``math.inf`` when antipodal).
        positive_similarity: ``c* = u_i . v_i = (1 - delta^2) / (1 + delta^2)``.
        negative_similarity: ``u_i . v_j`` for ``i != j`` (every cross-view negative).
        within_similarity: ``u_i . u_j = v_i . v_j`` for ``i != j``.
        normalized_positive: the paper's ``s = (1 + c*) / 2`` (Sec. 5.2).
        loss: the minimal loss (Eq. 3, ``1/N`` normalization).
    """

    n: int
    t: float
    b: float
    regime: str
    delta: float
    positive_similarity: float
    negative_similarity: float
    within_similarity: float
    normalized_positive: float
    loss: float

    @property
    def excessively_separated(self) -> bool:
        """Positive pairs not aligned and mean negative similarity below ``-1/(n-1)``
        (Theorem 5.3's excessive separation): every optimum but the simplex ETF. (Within an
        ulp of the ETF threshold ``positive_similarity`` may round to 1.0 all the same.)"""
        return self.regime != ETF


def sigmoid_optimum(n: int, t: float, b: float) -> SigmoidOptimum:
    r"""The optimal geometry and loss of the sigmoid loss with ``n`` pairs, for ``d >= n``.

    By Corollary 2 the optimum is a CCEM, and Lemma 1 makes the negatives an affine function of
    the positive similarity ``c``, so it minimizes the strictly convex
    ``f(c) = sp(b - t c) + (N-1) sp(t c2(c) - b)`` on ``[-1, 1]`` (``sp`` = softplus): the simplex
    ETF iff ``f'(1) <= 0``, antipodal iff ``f'(-1) >= 0`` (i.e. ``t + b <= log((N-2)/2)``),
    otherwise the root of ``f'``, found by Brent's method. The sign of ``f'`` is evaluated in
    log space, and this one test decides the regime everywhere in the library
    (:func:`sigmoid_thresholds`, :func:`~contrastkit.theory.sigmoid_excessive_separation`).

    - ``t == b``: this is Theorem 2 as the paper proves it (its thresholds are
      :func:`sigmoid_thresholds`, its ``delta*`` the root of the paper's ``g(N, t, delta)``).
    - any other ``(t, b)``: **an extension of the paper** (it treats only ``t = b``); Corollary 2
      and Lemma 1 hold for every ``t > 0`` and real ``b``.

    ``t`` and ``b`` are the papers' (``t = scale``, ``b = -bias`` of ``losses.siglip``). Runs in
    well under a millisecond for any ``n``.

    Example:
        >>> opt = sigmoid_optimum(8, 1.0, 1.0)
        >>> opt.regime, round(opt.positive_similarity, 10)
        ('intermediate', 0.518736237)
    """
    n = check_count("n", n, minimum=2)
    t = check_positive("t", t)
    b = check_real("b", b)
    regime = _regime(n, t, b)
    c = {ETF: 1.0, ANTIPODAL: -1.0}.get(regime)
    if c is None:  # the regime test saw the slope change sign on [-1, 1], with this function
        c = brentq(lambda c: _slope_sign(n, t, b, c), -1.0, 1.0, xtol=_XTOL)
    negative = _negative_similarity(n, c)
    return SigmoidOptimum(
        n=n,
        t=t,
        b=b,
        regime=regime,
        delta=math.inf if c == -1.0 else math.sqrt((1.0 - c) / (1.0 + c)),
        positive_similarity=c,
        negative_similarity=negative,
        within_similarity=negative + 1.0 - c,
        normalized_positive=(1.0 + c) / 2.0,
        loss=_reduced_loss(n, t, b, c),
    )


def _negative_similarity(n: int, c: float) -> float:
    """Lemma 1: the CCEM cross-view negative similarity at positive similarity ``c``."""
    return ((n - 2) * c - n) / (2 * (n - 1))


def _softplus(x: float) -> float:
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _reduced_loss(n: int, t: float, b: float, c: float) -> float:
    """Eq. 87 in the ``c`` parameterization: the sigmoid loss of the CCEM at ``c``."""
    return _softplus(b - t * c) + (n - 1) * _softplus(t * _negative_similarity(n, c) - b)


def _slope_sign(n: int, t: float, b: float, c: float) -> float:
    """A number with the sign of ``f'(c)``, the reduced loss's slope: the log of the ratio of
    its two terms, ``log((N-2)/2) + log sigma(t c2(c) - b) - log sigma(b - t c)``.

    Increasing in ``c`` (``f`` is strictly convex). ``-inf`` for ``N = 2``, where the negatives
    are pinned at ``-1`` and the slope is negative everywhere. At ``c = 1`` its positivity is
    condition (10) of the central paper."""
    if n == 2:
        return -math.inf
    return (math.log((n - 2) / 2) + _log_sigmoid(t * _negative_similarity(n, c) - b)
            - _log_sigmoid(b - t * c))


def _log_sigmoid(x: float) -> float:
    return -_softplus(-x)


def _is_etf(n: int, t: float, b: float) -> bool:
    """The regime test: the optimum is the simplex ETF iff ``f'(1) <= 0``."""
    return _slope_sign(n, t, b, 1.0) <= 0.0


def _is_antipodal(n: int, t: float, b: float) -> bool:
    """The regime test: the optimum is antipodal iff ``f'(-1) >= 0``."""
    return _slope_sign(n, t, b, -1.0) >= 0.0


def _regime(n: int, t: float, b: float) -> str:
    return ETF if _is_etf(n, t, b) else ANTIPODAL if _is_antipodal(n, t, b) else INTERMEDIATE


def infonce_ccem_minimum(n: int, t: float) -> tuple[float, float]:
    r"""The InfoNCE loss's minimum over the CCEM (Corollary 3's right side,
    ``min_{delta >= 0} L_InfoNCE(U(delta), V(delta))``), found numerically: ``(c*, loss)``, the
    positive similarity where it is attained and the minimal loss.

    The loss is the paper's Eq. 2 (both directions, temperature ``t`` dividing the
    similarities); on the CCEM at positive similarity ``c`` (Lemma 1's negatives ``c2(c)``) it
    is ``2 log(1 + (N-1) exp((c2(c) - c) / t))``, minimized over ``c`` in ``[-1, 1]`` (``c = 1``
    is ``delta = 0``, ``c = -1`` the antipodal limit) by a bounded scalar search, the ends
    compared too. Nothing here assumes Corollary 1 (that the minimum is the simplex ETF,
    ``c* = 1``); a recipe compares the two.

    Example:
        >>> c, loss = infonce_ccem_minimum(4, 0.5)
        >>> round(c, 6), round(loss, 10) == round(2 * math.log1p(3 * math.exp(-8 / 3)), 10)
        (1.0, True)
    """
    n = check_count("n", n, minimum=2)
    t = check_positive("t", t)

    def loss(c: float) -> float:
        return 2.0 * math.log1p((n - 1) * math.exp((_negative_similarity(n, c) - c) / t))

    inner = minimize_scalar(loss, bounds=(-1.0, 1.0), method="bounded",
                            options={"xatol": 1e-12})
    return min(((c, loss(c)) for c in (-1.0, 1.0, float(inner.x))), key=lambda pair: pair[1])
