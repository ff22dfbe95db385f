r"""The functions ``psi_k`` of Definition 1 of the hard-negative paper: the loss of one positive
pair is ``psi_k(t_1, ..., t_k)`` with ``t_m = z^T (z^-_m - z^+) / temperature``.

Each ``psi`` has two evaluations:

- :meth:`Psi.of_samples` on ``k`` sampled differences (the resampling estimator);
- :meth:`Psi.of_expectation`, the same ``psi`` with the inner average over the ``k``
  negatives replaced by its expectation under the sampling law (weights ``w_j`` over all
  candidates): the importance-weighting estimator of Robinson et al. It exists for the ``psi``
  that depend on the negatives only through ``mean_m phi(t_m)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from contrastkit.checks.scalars import check_positive

PSI_NAMES = ("infonce_mean", "infonce_sum", "triplet")


class Psi:
    """Base class: ``psi_k`` evaluated on samples or on an expectation."""

    name = "psi"
    has_expectation = False

    def of_samples(self, t: torch.Tensor) -> torch.Tensor:
        """``psi_k(t)`` along the last axis of ``t`` (shape ``(..., k)``)."""
        raise NotImplementedError

    def of_expectation(self, t: torch.Tensor, log_weights: torch.Tensor, k: int) -> torch.Tensor:
        """``psi_k`` with ``mean_m phi(t_m)`` replaced by ``sum_j w_j phi(t_j)`` (last axis;
        ``log_weights`` are ``log w_j``, summing to 1 in probability)."""
        raise NotImplementedError


class InfoNCEMean(Psi):
    r"""``log(1 + (1/k) sum_m e^{t_m})``: the form of every experiment of the paper
    (Algorithm 1, line 22), whose optimal values 0.2014 / 0.3935 / 0.3105 the paper reports."""

    name = "infonce_mean"
    has_expectation = True

    def of_samples(self, t):
        return F.softplus(torch.logsumexp(t, dim=-1) - math.log(t.shape[-1]))

    def of_expectation(self, t, log_weights, k):
        return F.softplus(torch.logsumexp(log_weights + t, dim=-1))


class InfoNCESum(Psi):
    r"""``log(alpha + sum_m e^{t_m})``: Definition 1's InfoNCE (``alpha = 1`` in Figs. 5, 6)."""

    name = "infonce_sum"
    has_expectation = True

    def __init__(self, alpha: float = 1.0):
        self.log_alpha = math.log(check_positive("alpha", alpha))

    def of_samples(self, t):
        return self.log_alpha + F.softplus(torch.logsumexp(t, dim=-1) - self.log_alpha)

    def of_expectation(self, t, log_weights, k):
        log_sum = math.log(k) + torch.logsumexp(log_weights + t, dim=-1)
        return self.log_alpha + F.softplus(log_sum - self.log_alpha)


class Triplet(Psi):
    r"""``sum_m max(t_m + alpha, 0)``: the triplet loss of Definition 1."""

    name = "triplet"
    has_expectation = True

    def __init__(self, alpha: float = 1.0):
        self.alpha = check_positive("alpha", alpha)

    def of_samples(self, t):
        return F.relu(t + self.alpha).sum(dim=-1)

    def of_expectation(self, t, log_weights, k):
        return k * (log_weights.exp() * F.relu(t + self.alpha)).sum(dim=-1)


class CustomPsi(Psi):
    """A user's ``psi``: a callable mapping ``t`` of shape ``(..., k)`` to shape ``(...)``.

    Theorem 1 needs it argument-wise non-decreasing; Theorems 2 and 3 also convex.
    """

    name = "custom"

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]):
        self.fn = fn

    def of_samples(self, t):
        return self.fn(t)


def make_psi(psi: str | Callable | Psi, alpha: float = 1.0) -> Psi:
    """Build a :class:`Psi` from a name in ``PSI_NAMES``, a callable or a :class:`Psi`."""
    if isinstance(psi, Psi):
        return psi
    if psi == "infonce_mean":
        return InfoNCEMean()
    if psi == "infonce_sum":
        return InfoNCESum(alpha)
    if psi == "triplet":
        return Triplet(alpha)
    if callable(psi) and not isinstance(psi, str):
        return CustomPsi(psi)
    raise ValueError(f"psi must be one of {PSI_NAMES} or a callable, got {psi!r}")
