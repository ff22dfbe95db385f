"""SimCLR / NT-Xent loss (Table 2 row: exp(x/t), log(1+x), c=(1,1))."""

from __future__ import annotations

import torch

from ._exp_family import TemperatureLoss, exp_family_loss
from .registry import register


def simclr(
    u: torch.Tensor,
    v: torch.Tensor,
    temperature: float = 0.2,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    r"""SimCLR's NT-Xent loss (Appendix A.1, item 2), averaged over all ``2B`` anchors.

    Anchor ``u_i`` is normalized against its positive ``v_i``, the cross-view negatives
    ``v_j`` and the within-view negatives ``u_j`` (``j != i``), i.e. the ``2B - 1`` other
    embeddings of the batch; likewise for anchor ``v_i``.

    ``chunk_size`` and ``distributed``: see :func:`~contrastkit.losses._exp_family.exp_family_loss`
    (memory ``O(B * chunk_size)``; the global batch under torch.distributed).

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> float(losses.simclr(u, v)) > 0
        True
    """
    return exp_family_loss(
        u, v, temperature,
        cross_view=True, within_view=True, include_positive=True, normalize=normalize,
        chunk_size=chunk_size, distributed=distributed,
    )


@register("simclr")
class SimCLR(TemperatureLoss):
    """Module form of :func:`simclr`."""

    default_temperature = 0.2
    loss_fn = staticmethod(simclr)
