"""Decoupled contrastive loss, DCL (Yeh et al.; Table 2 row: exp(x/t), log(x), c=(1,1))."""

from __future__ import annotations

import torch

from ._exp_family import TemperatureLoss, exp_family_loss
from .registry import register


def dcl(
    u: torch.Tensor,
    v: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    r"""Decoupled contrastive loss (Appendix A.1, item 3): SimCLR without the positive in the
    normalizer.

    .. math::
        \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i}\big(e^{u_i^\top v_j/t} + e^{u_i^\top u_j/t}\big)
        - u_i^\top v_i/t\Big] + (\text{same with } u \leftrightarrow v)

    The paper's first line writes ``u_j^T u_i`` in the second term's normalizer; its
    rewritten form (and DCL itself) uses ``v_j^T v_i``, which is what is computed here.
    The value can be negative.

    ``chunk_size`` and ``distributed``: see :func:`~contrastkit.losses._exp_family.exp_family_loss`
    (memory ``O(B * chunk_size)``; the global batch under torch.distributed).
    """
    return exp_family_loss(
        u, v, temperature,
        cross_view=True, within_view=True, include_positive=False, normalize=normalize,
        chunk_size=chunk_size, distributed=distributed,
    )


@register("dcl")
class DCL(TemperatureLoss):
    """Module form of :func:`dcl`."""

    default_temperature = 0.1
    loss_fn = staticmethod(dcl)
