"""Bounds on the similarities of embeddings (central paper Thm 5.2 and Thm 5.5; LMCL Eq. 5).

Every function here is exact closed-form arithmetic; the ones taking embeddings accept numpy
arrays of shape ``(n, d)`` with unit rows (row ``i`` of ``u`` and ``v`` is positive pair ``i``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from contrastkit.checks.scalars import check_count, check_real


class VarianceBounds(NamedTuple):
    """The interval of Theorem 5.5 for the variance of negative-pair similarities."""

    low: float
    high: float


def minibatch_variance_bounds(n: int, m: int) -> VarianceBounds:
    r"""Theorem 5.5 (eq. 11): the variance of negative-pair similarities at a fixed mini-batch
    optimum lies in

    .. math::
        \Big[\frac{n-m}{(m-1)(n-1)^2},\ \frac{n(n-m)}{(m-1)(n-1)^2}\Big]

    for ``n`` samples split into ``b = n/m`` fixed batches of size ``m`` (the variance is over all
    ``n(n-1)`` ordered cross-view negative pairs, population form). Both ends are attained, see
    :func:`~contrastkit.theory.minibatch_optimum`; the lower end needs ``d >= b(m-1)``. At
    ``m = n`` both are 0 (Theorem 5.1) and both decrease in ``m``.

    The theorem assumes ``m`` divides ``n``. For other ``m`` (the paper applies it to
    ``n = 50 000`` with ``m = 256``) this returns the same expression with ``b = n/m``
    fractional, an approximation the paper makes implicitly.

    Example:
        >>> minibatch_variance_bounds(4, 2)   # Fig. 2: 2/9 and 8/9
        VarianceBounds(low=0.2222222222222222, high=0.8888888888888888)
    """
    n = check_count("n", n, minimum=2)
    m = check_count("m", m, minimum=2)
    if m > n:
        raise ValueError(f"m (the batch size) must be <= n = {n}, got {m}")
    low = (n - m) / ((m - 1) * (n - 1) ** 2)
    return VarianceBounds(low=low, high=n * low)


class NegativeBand(NamedTuple):
    """The band of negative-pair similarities of :func:`negative_similarity_band`."""

    low: float
    high: float


def negative_similarity_band(n: int, m: int) -> NegativeBand:
    r"""The theory's band of negative-pair similarities for dataset size ``n`` and batch size
    ``m``: Theorem 5.5's mean (eq. 11, ``-1/(n-1)``, Theorem 5.1's value too) plus and minus
    the square root of its largest variance (eq. 11's upper end,
    :func:`minibatch_variance_bounds`),

    .. math::
        -\frac{1}{n-1} \pm \sqrt{\frac{n(n-m)}{(m-1)(n-1)^2}}.

    At any fixed mini-batch optimum the negatives' mean is the band's centre and their standard
    deviation at most its half-width, so (Cantelli's inequality) at most half of them lie above
    ``high``; at ``m = n`` (the full-batch optimum, every negative at ``-1/(n-1)``) the band is
    that one point. A trained model's negatives above ``high`` are more alike than the theory's
    widest optimum for this batch size spreads them: candidates for false negatives.

    Example:
        >>> band = negative_similarity_band(4, 2)  # Fig. 2: mean -1/3, variance at most 8/9
        >>> round(band.low, 4), round(band.high, 4)
        (-1.2761, 0.6095)
    """
    bounds = minibatch_variance_bounds(n, m)
    centre, half_width = -1.0 / (n - 1), math.sqrt(bounds.high)
    return NegativeBand(low=centre - half_width, high=centre + half_width)


def positive_similarity_ceiling(negative_mean: float, n: int) -> float:
    r"""Theorem 5.2 (eq. 7): ``E[s_pos] <= 1 + (E[s_neg] + 1/(n-1))`` for any unit embeddings.

    Read the other way, a mean negative similarity below ``-1/(n-1)`` ("excessive separation")
    forces the positive pairs apart. The inequality holds, but the paper's equality condition
    does not: see :func:`tight_positive_similarity_ceiling` and ``docs/theory.md``.
    """
    n = check_count("n", n, minimum=2)
    return 1.0 + check_real("negative_mean", negative_mean) + 1.0 / (n - 1)


def tight_positive_similarity_ceiling(negative_mean: float, n: int) -> float:
    r"""The tight form of Theorem 5.2 (Lemma C.6, i.e. Lemma 1 of Lee et al. 2024):

    .. math::
        E[s_{pos}] \le \frac{n + 2(n-1)\,E[s_{neg}]}{n-2},\qquad n \ge 3,

    with equality iff ``u_i - v_i`` is the same vector for every ``i`` and ``sum_i (u_i + v_i)
    = 0`` (e.g. the CCEM at any ``delta``). Wherever a ceiling binds (``E[s_neg] < -1/(n-1)``,
    where both are below 1) it is strictly lower than :func:`positive_similarity_ceiling`; both
    equal 1 at ``E[s_neg] = -1/(n-1)``. Follows from :func:`alignment_identity`.
    """
    n = check_count("n", n, minimum=3)
    return (n + 2 * (n - 1) * check_real("negative_mean", negative_mean)) / (n - 2)


@dataclass(frozen=True)
class AlignmentIdentity:
    """Both sides of the corrected Lemma C.3 / C.4 identity (see :func:`alignment_identity`)."""

    positive_mean: float
    negative_mean: float
    lhs: float  # 1 - E[s_pos] + 2 E[u] . E[v]
    trace_var_difference: float  # tr Var[u - v] over the n positive pairs
    mean_sum_norm_sq: float  # || E[u + v] ||^2

    @property
    def rhs(self) -> float:
        return 0.5 * self.trace_var_difference + 0.5 * self.mean_sum_norm_sq


def alignment_identity(u: np.ndarray, v: np.ndarray) -> AlignmentIdentity:
    r"""The identity behind Theorem 5.2, in its correct form, on ``n`` positive pairs:

    .. math::
        1 - E[u^\top v] + 2\,E[u]^\top E[v]
        = \tfrac12\,\mathrm{tr}\,\mathrm{Var}[u - v] + \tfrac12\,\|E[u + v]\|^2 ,

    with ``E[u]^T E[v] = (E[s_pos] + (n-1) E[s_neg]) / n``. The paper's Lemma C.3 prints the
    factor 1 instead of 2 in front of ``E[u]^T E[v]`` (and Lemma C.4 inherits it), which is why
    its equality condition for Theorem 5.2 is wrong. Rows of ``u, v`` must be unit vectors.
    """
    u, v = _unit_pairs(u, v)
    n = u.shape[0]
    sims = u @ v.T
    positive_mean = float(np.trace(sims) / n)
    negative_mean = float((sims.sum() - np.trace(sims)) / (n * (n - 1)))
    difference = u - v
    return AlignmentIdentity(
        positive_mean=positive_mean,
        negative_mean=negative_mean,
        lhs=1.0 - positive_mean + 2.0 * float(u.mean(axis=0) @ v.mean(axis=0)),
        trace_var_difference=float(difference.var(axis=0).sum()),
        mean_sum_norm_sq=float(np.sum((u + v).mean(axis=0) ** 2)),
    )


def lmcl_mean_distance_ceiling(n: int) -> float:
    r"""LMCL Eq. (5) / footnote 1: for any ``n`` unit vectors, the mean over pairs ``i < j`` of
    ``D_ij = (1 - z_i . z_j) / 2`` is at most ``n / (2n - 2)``, with equality iff the vectors
    sum to zero. (The paper's "1/2" is the ``n -> inf`` limit.)
    """
    n = check_count("n", n, minimum=2)
    return n / (2 * n - 2)


def _unit_pairs(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    for name, x in (("u", u), ("v", v)):
        if x.ndim != 2 or x.shape[0] < 2:
            raise ValueError(f"{name} must have shape (n, d) with n >= 2, got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or Inf values")
        if not np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-8):
            raise ValueError(f"{name} must have unit-norm rows")
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
    return u, v
