"""Spectral contrastive loss in the paper's Table 3 form (phi(x) = x, psi(x) = x^2, c=(1,0))."""

from __future__ import annotations

import torch

from .base import ContrastiveLoss
from .registry import register
from .views import prepare_views


def spectral(u: torch.Tensor, v: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    r"""Spectral contrastive loss as Table 3 / Appendix A.2 write it:

    .. math::
        -\frac1B \sum_i u_i^\top v_i + \frac{1}{B(B-1)} \sum_{i\ne j} (u_i^\top v_j)^2

    (The appendix's first term reads ``u_i^T v_j``, a typo for the positive ``u_i^T v_i``.)
    HaoChen et al. weight the positive term by 2; this is the weight-1 form the paper's
    theory uses.
    """
    u, v = prepare_views(u, v, normalize)
    sims = u @ v.T
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

    def forward(self, u, v, labels=None):
        return spectral(u, v, normalize=self.normalize)
