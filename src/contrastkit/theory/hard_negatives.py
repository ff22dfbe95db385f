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


