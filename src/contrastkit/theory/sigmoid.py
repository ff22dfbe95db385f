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
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.special import expit

from ._checks import check_count, check_positive, check_real

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

    Example:
        >>> sigmoid_thresholds(5)
        SigmoidThresholds(antipodal=0.2027325540540822, etf=0.5545177444479562)
    """
    n = check_count("n", n, minimum=2)
    antipodal = 0.5 * math.log((n - 2) / 2) if n > 4 else 0.0
    etf = (n - 1) / n * math.log(n - 3) if n > 4 else 0.0
    return SigmoidThresholds(antipodal=antipodal, etf=etf)


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
        (Theorem 5.3's excessive separation)."""
        return self.positive_similarity < 1.0


def sigmoid_optimum(n: int, t: float, b: float) -> SigmoidOptimum:
    r"""The optimal geometry and loss of the sigmoid loss with ``n`` pairs, for ``d >= n``.

    - ``t == b``: Theorem 2 exactly as the paper proves it — the regime by
      :func:`sigmoid_thresholds`, and in between ``delta*`` as the unique root of the paper's
      ``g(N, t, delta)`` (App. B.4), found by Brent's method (no closed form exists).
    - any other ``(t, b)``: **an extension of the paper** (it treats only ``t = b``). Corollary 2
      holds for every ``t > 0`` and real ``b``, and Lemma 1 makes the negatives an affine
      function of ``c``, so the optimum minimizes the strictly convex
      ``f(c) = sp(b - t c) + (N-1) sp(t c2(c) - b)`` on ``[-1, 1]`` (``sp`` = softplus):
      ETF iff ``f'(1) <= 0``, antipodal iff ``f'(-1) >= 0`` (i.e. ``t + b <= log((N-2)/2)``),
      otherwise the root of ``f'``.

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
    c = _theorem2_optimal_c(n, t) if t == b else _convex_optimal_c(n, t, b)
    regime = ETF if c == 1.0 else ANTIPODAL if c == -1.0 else INTERMEDIATE
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


def _convex_optimal_c(n: int, t: float, b: float) -> float:
    """Minimize the convex reduced loss over ``c in [-1, 1]`` (the general-(t, b) extension)."""

    def slope(c: float) -> float:
        return -t * expit(b - t * c) + t * (n - 2) / 2 * expit(t * _negative_similarity(n, c) - b)

    if slope(-1.0) >= 0.0:
        return -1.0
    if slope(1.0) <= 0.0:
        return 1.0
    return brentq(slope, -1.0, 1.0, xtol=_XTOL)


def _theorem2_optimal_c(n: int, t: float) -> float:
    """Theorem 2 (``t = b``): thresholds, then the root of ``g(N, t, delta)`` in ``c`` form."""
    thresholds = sigmoid_thresholds(n)
    if t >= thresholds.etf:
        return 1.0
    if t <= thresholds.antipodal:
        return -1.0

    def g(c: float) -> float:
        # App. B.4: g = (4-N) + 2 exp(B) - (N-2) exp(-A), A = t(1-c), B = A + t N(1+c)/(2(N-1))
        a = t * (1.0 - c)
        b_exponent = a + t * n * (1.0 + c) / (2 * (n - 1))
        return (4 - n) + 2 * math.exp(b_exponent) - (n - 2) * math.exp(-a)

    # g increases in delta, i.e. decreases in c: g(c=1) < 0 < g(c=-1) in the middle regime
    return brentq(g, -1.0, 1.0, xtol=_XTOL)
