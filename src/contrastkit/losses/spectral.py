"""Spectral contrastive loss in the paper's Table 3 form (phi(x) = x, psi(x) = x^2, c=(1,0))."""

from __future__ import annotations

from typing import Any

import torch

from contrastkit.dtypes import autocast_off, cast

from .base import ContrastiveLoss
from .kernels.squared_sums import off_diagonal_squared_sum, similarities_are_cheaper
from .registry import register
from .views import SharedViews, public_form


def spectral_shared(shared: SharedViews, normalize: bool = True) -> torch.Tensor:
    """:func:`spectral` (Table 3) on a :class:`SharedViews`. Up to ``B = 2d`` it reads the
    shared product ``u v^T`` (:meth:`SharedViews.similarities`, computed once with a
    polarization term's cross pairs); beyond, where the ``B x B`` products cost more than two
    ``d x d`` Gram matrices, the squared negatives come from those, in float64
    (:func:`.kernels.squared_sums.off_diagonal_squared_sum`, as VRNS computes them)."""
    u, v = shared.prepared(normalize)
    batch, dim = u.shape
    if similarities_are_cheaper(batch, batch, dim):
        sims = shared.similarities("uv", normalize)
        sims = sims.to(torch.promote_types(sims.dtype, torch.float32))
        positive = sims.diagonal()
        negative_sq_sum = sims.square().sum() - positive.square().sum()
        return -positive.mean() + negative_sq_sum / (batch * (batch - 1))
    dtype = torch.promote_types(u.dtype, torch.float32)
    with autocast_off(shared.device.type):
        positive = (cast(u, dtype) * cast(v, dtype)).sum(dim=1)
        negative_sq_sum = off_diagonal_squared_sum(u, v, v, 0.0, 0)
        return -positive.mean() + (negative_sq_sum / (batch * (batch - 1))).to(dtype)


@public_form(spectral_shared)
def spectral(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    r"""Spectral contrastive loss as Table 3 / Appendix A.2 write it:

    .. math::
        -\frac1B \sum_i u_i^\top v_i + \frac{1}{B(B-1)} \sum_{i\ne j} (u_i^\top v_j)^2

    (The appendix's first term reads ``u_i^T v_j``, a typo for the positive ``u_i^T v_i``.)
    HaoChen et al. weight the positive term by 2; this is the weight-1 form the paper's
    theory uses.
    """
    return spectral_shared(SharedViews(u, v), *args, **kwargs)


@register("spectral")
class Spectral(ContrastiveLoss):
    """Module form of :func:`spectral`."""

    def __init__(self, normalize: bool = True) -> None:
        super().__init__()
        self.normalize = normalize

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return spectral_shared(shared, normalize=self.normalize)
