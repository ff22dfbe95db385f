"""Spectral contrastive loss in the paper's Table 3 form (phi(x) = x, psi(x) = x^2, c=(1,0))."""

from __future__ import annotations

import torch

from .base import ContrastiveLoss
from .registry import register
from .views import SharedViews


def spectral(u: torch.Tensor, v: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    r"""Spectral contrastive loss as Table 3 / Appendix A.2 write it:

    .. math::
        -\frac1B \sum_i u_i^\top v_i + \frac{1}{B(B-1)} \sum_{i\ne j} (u_i^\top v_j)^2

    (The appendix's first term reads ``u_i^T v_j``, a typo for the positive ``u_i^T v_i``.)
    HaoChen et al. weight the positive term by 2; this is the weight-1 form the paper's
    theory uses.
    """
    return spectral_shared(SharedViews(u, v), normalize)


def spectral_shared(shared: SharedViews, normalize: bool = True) -> torch.Tensor:
    """:func:`spectral` (Table 3) on a :class:`SharedViews`; ``u v^T`` is the shared product
    (:meth:`SharedViews.similarities`), computed once with a polarization term's cross pairs."""
    sims = shared.similarities("uv", normalize)
    sims = sims.to(torch.promote_types(sims.dtype, torch.float32))
    batch = sims.shape[0]
    positive = sims.diagonal()
    negative_sq_sum = sims.square().sum() - positive.square().sum()
    return -positive.mean() + negative_sq_sum / (batch * (batch - 1))


@register("spectral")
class Spectral(ContrastiveLoss):
    """Module form of :func:`spectral`."""

    def __init__(self, normalize: bool = True):
        super().__init__()
        self.normalize = normalize

    def forward_shared(self, shared, labels=None):
        return spectral_shared(shared, normalize=self.normalize)
