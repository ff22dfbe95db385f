"""Decoupled hyperspherical energy loss, DHEL (Koromilas et al.; Table 2 row: exp(x/t), log(x),
c=(0,1))."""

from __future__ import annotations

import torch

from ._exp_family import TemperatureLoss, exp_family_loss
from .registry import register


def dhel(
    u: torch.Tensor,
    v: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    r"""Decoupled hyperspherical energy loss (Appendix A.1, item 4): only within-view negatives.

    .. math::
        \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i} e^{u_i^\top u_j/t} - u_i^\top v_i/t\Big]
        + \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i} e^{v_i^\top v_j/t} - u_i^\top v_i/t\Big]

    (The paper's first line writes ``u_j^T u_i`` in the second term; the rewritten form, used
    here, has ``v_j^T v_i``.) The value can be negative.

    ``chunk_size`` and ``distributed``: see :func:`~contrastkit.losses._exp_family.exp_family_loss`
    (memory ``O(B * chunk_size)``; the global batch under torch.distributed).
    """
    return exp_family_loss(
        u, v, temperature,
        cross_view=False, within_view=True, include_positive=False, normalize=normalize,
        chunk_size=chunk_size, distributed=distributed,
    )


@register("dhel")
class DHEL(TemperatureLoss):
    """Module form of :func:`dhel`."""

    default_temperature = 0.1
    loss_fn = staticmethod(dhel)
