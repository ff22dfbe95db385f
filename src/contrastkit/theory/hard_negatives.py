"""Lower bounds of supervised and unsupervised CL (Jiang, Nguyen, Aeron, Ishwar 2025,
"Hard-Negative Sampling for Contrastive Learning": Theorems 2 and 3).

The loss is ``psi_k(z.(z-_1 - z+), ..., z.(z-_k - z+))`` with ``k`` negatives, ``C`` equiprobable
classes and representations in the unit ball. Both bounds are attained exactly at Neural
Collapse (class means a simplex ETF, zero within-class variance). ``psi`` is one of:

- ``"mean"``: ``log(1 + (1/k) sum_i exp(t_i))``, the form of the paper's experiments and of its
  reported values (0.2014, 0.3935, 0.3105);
- ``"sum"``: ``log(1 + sum_i exp(t_i))``, Definition 1's InfoNCE with ``alpha = 1``;
- ``"triplet"``: ``sum_i max(t_i + 1, 0)`` (triplet loss with margin 1).

Every ``psi`` here is symmetric in its arguments, so the expectation over the ``2^k`` class
patterns of Theorem 3 reduces to a binomial sum over the number of true negatives.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from contrastkit.checks.scalars import check_count

PSI_FORMS = ("mean", "sum", "triplet")


def scl_lower_bound(C: int, k: int = 256, psi: str = "mean") -> float:  # noqa: N803
    r"""Theorem 2, eq. (11): ``L_SCL(f) >= psi_k(-C/(C-1), ..., -C/(C-1))`` for every ``f``.

    For ``psi="mean"`` this is ``log(1 + exp(-C/(C-1)))``, independent of ``k``.

    Example:
        >>> round(scl_lower_bound(3), 7), round(scl_lower_bound(100), 7)
        (0.2014133, 0.3105551)
    """
    C = check_count("C", C, minimum=2)  # noqa: N806
    k = check_count("k", k, minimum=1)
    return float(_psi(psi, k, true_negatives=np.array([k]), margin=-C / (C - 1))[0])


def ucl_lower_bound(C: int, k: int = 256, psi: str = "mean") -> float:  # noqa: N803
    r"""Theorem 3, eq. (30): ``L_UCL(f) >= E_b[psi_k(-C b_1/(C-1), ..., -C b_k/(C-1))]`` with
    ``b_i ~ Bernoulli((C-1)/C)`` i.i.d. (a negative shares the anchor's latent class with
    probability ``1/C``). Needs anchor and positive conditionally independent given the class.

    Example:
        >>> round(ucl_lower_bound(3, k=256), 7)   # the paper rounds its limit to 0.3935
        0.3933318
    """
    C = check_count("C", C, minimum=2)  # noqa: N806
    k = check_count("k", k, minimum=1)
    counts = np.arange(k + 1)
    weights = binom.pmf(counts, k, (C - 1) / C)
    values = _psi(psi, k, true_negatives=counts, margin=-C / (C - 1))
    return float(np.dot(weights, values))


def _psi(form: str, k: int, true_negatives: np.ndarray, margin: float) -> np.ndarray:
    """``psi_k`` at ``true_negatives`` arguments equal to ``margin`` and the others 0."""
    others = k - true_negatives
    if form == "mean":
        return np.log1p((others + true_negatives * math.exp(margin)) / k)
    if form == "sum":
        return np.log1p(others + true_negatives * math.exp(margin))
    if form == "triplet":
        return true_negatives * max(margin + 1.0, 0.0) + others * 1.0
    raise ValueError(f"psi must be one of {PSI_FORMS}, got {form!r}")




def hard_negative_losses(z: np.ndarray, labels: np.ndarray, k: int, beta: float,
                         supervised: bool = True, psi: str = "mean") -> dict[str, float]:
    r"""The exact CL loss of representation ``z`` with reference and with hard negatives
    (Theorem 1: ``L_HSCL >= L_SCL`` and ``L_HUCL >= L_UCL`` for every ``f``).

    On the finite set of rows ``z`` (shape ``(n, d)``) with ``labels``: every anchor ``i``, every
    positive ``j != i`` of its class (uniformly), and ``k`` i.i.d. negatives drawn from the
    reference distribution (``supervised``: uniformly among the other classes' rows, SCL;
    otherwise uniformly among all rows, UCL) or from its exponential tilting by
    ``exp(beta z_i.z_l)`` (the paper's hardening function, Definition 2), each pair's loss being
    ``psi_k(z_i.(z_l1 - z_j), ..., z_i.(z_lk - z_j))`` (``psi`` as :data:`PSI_FORMS`). Both
    expectations over the negatives are exact sums over every ``k``-tuple (``m^k`` terms for
    ``m`` candidate negatives: meant for small ``k``).

    Returns ``reference`` and ``hard`` (the two losses, averaged over anchors and positives),
    and ``min_pair_gap``, the smallest ``hard - reference`` of one anchor and positive: the
    proof's Harris inequality holds for each one, so it is at least 0 up to rounding.

    Example:
        >>> z = np.array([[1.0, 0.0], [0.8, 0.6], [-1.0, 0.0], [-0.6, -0.8]])
        >>> out = hard_negative_losses(z, np.array([0, 0, 1, 1]), k=2, beta=5.0)
        >>> out["hard"] >= out["reference"], out["min_pair_gap"] >= 0
        (True, True)
    """
    z, labels = np.asarray(z, dtype=np.float64), np.asarray(labels)
    k = check_count("k", k, minimum=1)
    if psi not in PSI_FORMS:
        raise ValueError(f"psi must be one of {PSI_FORMS}, got {psi!r}")
    reference, hard, gaps = [], [], []
    for anchor in range(len(z)):
        candidates = np.flatnonzero(labels != labels[anchor]) if supervised else np.arange(len(z))
        similarity = z[candidates] @ z[anchor]
        tilt = np.exp(beta * (similarity - similarity.max()))
        for positive in np.flatnonzero(labels == labels[anchor]):
            if positive == anchor:
                continue
            values = _tuple_values(psi, similarity - z[positive] @ z[anchor], k)
            uniform = float(values.mean())
            tilted = float(np.einsum(_tilt_subscripts(k), values, *[tilt] * k)
                           / tilt.sum() ** k)
            reference.append(uniform)
            hard.append(tilted)
            gaps.append(tilted - uniform)
    return {"reference": float(np.mean(reference)), "hard": float(np.mean(hard)),
            "min_pair_gap": float(np.min(gaps))}


def _tuple_values(form: str, margins: np.ndarray, k: int) -> np.ndarray:
    """``psi_k`` at every ``k``-tuple of ``margins``: an array of ``len(margins)`` per axis."""
    grids = np.meshgrid(*[margins] * k, indexing="ij")
    if form == "mean":
        return np.log1p(sum(np.exp(grid) for grid in grids) / k)
    if form == "sum":
        return np.log1p(sum(np.exp(grid) for grid in grids))
    return sum(np.maximum(grid + 1.0, 0.0) for grid in grids)


def _tilt_subscripts(k: int) -> str:
    """``einsum`` subscripts weighting a ``k``-axis array by one vector per axis."""
    axes = "abcdefgh"[:k]
    return f"{axes},{','.join(axes)}->"
