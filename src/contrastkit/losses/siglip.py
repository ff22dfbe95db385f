"""Sigmoid (SigLIP) loss (paper eq. 9; Table 3 row: phi = -log(1+exp(-tx+b)),
psi = (n-1) log(1+exp(tx-b)), c=(1,0))."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._base import ContrastiveLoss
from ._checks import check_finite_number, check_positive, prepare_views


def siglip(
    u: torch.Tensor,
    v: torch.Tensor,
    scale: float = 10.0,
    bias: float = -10.0,
    normalize: bool = True,
) -> torch.Tensor:
    r"""Sigmoid contrastive loss with logits ``scale * cos + bias`` (as SigLIP and open_clip).

    .. math::
        \frac1B \sum_i \log\big(1 + e^{-(s\,u_i^\top v_i + \beta)}\big)
        + \frac1B \sum_{i\ne j} \log\big(1 + e^{s\,u_i^\top v_j + \beta}\big)

    with ``s = scale`` and ``beta = bias``. The papers in ``papers/`` write eq. (9) with a
    temperature ``t`` and a bias ``b`` entering as ``-t x + b``: **``t = scale`` and
    ``b = -bias``**. SigLIP's initialization (scale 10, bias -10) is ``(t, b) = (10, 10)``.

    Computed with ``softplus``, which is exact and finite for any logit.
    """
    scale = check_positive("scale", scale)
    bias = check_finite_number("bias", bias)
    u, v = prepare_views(u, v, normalize)
    sims = u @ v.T
    logits = sims.to(torch.promote_types(sims.dtype, torch.float32)) * scale + bias
    # label +1 on the diagonal (positives), -1 elsewhere: loss = softplus(-label * logit)
    signs = 1 - 2 * torch.eye(logits.shape[0], dtype=logits.dtype, device=logits.device)
    return F.softplus(signs * logits).sum() / logits.shape[0]


class SigLIP(ContrastiveLoss):
    """Module form of :func:`siglip` with fixed ``scale`` and ``bias``."""

    name = "siglip"

    def __init__(self, scale: float = 10.0, bias: float = -10.0, normalize: bool = True):
        super().__init__()
        self.scale = check_positive("scale", scale)
        self.bias = check_finite_number("bias", bias)
        self.normalize = normalize

    def forward(self, u, v, labels=None):
        return siglip(u, v, scale=self.scale, bias=self.bias, normalize=self.normalize)

    def extra_repr(self) -> str:
        return f"scale={self.scale:g}, bias={self.bias:g}"
