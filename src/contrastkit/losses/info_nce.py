"""InfoNCE / CLIP loss, symmetric form (paper eq. 13; Table 2 row: exp(x/t), log(1+x), c=(1,0))."""

from __future__ import annotations

import torch

from ._exp_family import TemperatureLoss, exp_family_loss
from .registry import register


def info_nce(
    u: torch.Tensor,
    v: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    r"""Symmetric InfoNCE (CLIP) loss, eq. (13).

    .. math::
        -\frac{1}{2B}\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_i^\top v_j/t}}
        -\frac{1}{2B}\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_j^\top v_i/t}}

    Only cross-view negatives enter. Returns a scalar tensor.

    ``chunk_size`` and ``distributed``: see :func:`~contrastkit.losses._exp_family.exp_family_loss`
    (memory ``O(B * chunk_size)``; the global batch under torch.distributed).

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> losses.info_nce(u, v, temperature=0.1).shape
        torch.Size([])
    """
    return exp_family_loss(
        u, v, temperature,
        cross_view=True, within_view=False, include_positive=True, normalize=normalize,
        chunk_size=chunk_size, distributed=distributed,
    )


@register("info_nce")
class InfoNCE(TemperatureLoss):
    """Module form of :func:`info_nce`."""

    default_temperature = 0.1
    loss_fn = staticmethod(info_nce)
