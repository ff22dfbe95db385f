"""Sigmoid (SigLIP) loss (paper eq. 9; Table 3 row: phi = -log(1+exp(-tx+b)),
psi = (n-1) log(1+exp(tx-b)), c=(1,0))."""

from __future__ import annotations

from typing import Any

import torch

from .explicit_negatives import negative_columns, negative_logits, negative_softplus_sum
from .kernels import check_chunk_size, plain_autograd, positive_logits, small_logits, softplus_sum
from .kernels.softplus_sum import PLAIN_FACTOR, softplus
from .learnable import SIGLIP_BIAS, SIGLIP_SCALE, LearnableLoss, Setting, check_setting
from .registry import register
from .views import SharedViews, public_form


def siglip_shared(
    shared: SharedViews,
    scale: Setting = SIGLIP_SCALE,
    bias: Setting = SIGLIP_BIAS,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    """:func:`siglip` (eq. 9) on a :class:`SharedViews`, whose ``negatives`` are the explicit
    ones: the normalized, gathered batch is the one every term of a composite with the same
    ``normalize`` and ``distributed`` uses."""
    scale = check_setting("scale", scale, positive=True)
    bias = check_setting("bias", bias, positive=False)
    chunk_size = check_chunk_size(chunk_size)
    batch = shared.batch(normalize, distributed)
    rows, extra = batch.u.shape[0], negative_columns(batch)
    columns = batch.v_all.shape[0] + extra
    if plain_autograd(rows, columns, chunk_size, batch.u.device, PLAIN_FACTOR):
        # a small matrix: one softplus over it, and the positives (i, offset + i) read off it
        logits = small_logits(batch.u, batch.v_all, scale) + bias
        total = softplus(logits).sum() - logits.diagonal(batch.offset).sum()
        if extra:  # one negative pair per anchor and explicit negative
            total = total + softplus(negative_logits(batch, scale) + bias).sum()
        return total / rows
    all_pairs = softplus_sum(batch.u, batch.v_all, scale, bias, chunk_size)
    if extra:
        all_pairs = all_pairs + negative_softplus_sum(batch, scale, bias, chunk_size)
    positives = positive_logits(batch.u, batch.v, scale) + bias
    return (all_pairs - positives.sum()) / rows


@public_form(siglip_shared)
def siglip(u: torch.Tensor, v: torch.Tensor, *args: Any, negatives: torch.Tensor | None = None,
           **kwargs: Any) -> torch.Tensor:
    r"""Sigmoid contrastive loss with logits ``scale * cos + bias`` (as SigLIP and open_clip).

    .. math::
        \frac1B \sum_i \log\big(1 + e^{-(s\,u_i^\top v_i + \beta)}\big)
        + \frac1B \sum_{i\ne j} \log\big(1 + e^{s\,u_i^\top v_j + \beta}\big)

    with ``s = scale`` and ``beta = bias``. The papers (e.g. arXiv:2402.12613) write eq. (9) with a
    temperature ``t`` and a bias ``b`` entering as ``-t x + b``: **``t = scale`` and
    ``b = -bias``**. SigLIP's initialization (scale 10, bias -10) is ``(t, b) = (10, 10)``.

    Computed with ``softplus``, which is exact and finite for any logit. Since
    ``softplus(-x) = softplus(x) - x``, the loss is ``(1/B) sum_{i,j} softplus(logit_ij) -
    (1/B) sum_i logit_ii``: one fused pass over the ``B x B`` logits (which also applies their
    derivative, so nothing of their size is kept; no label matrix) plus an ``O(B d)`` positive
    term. ``chunk_size`` (rows per block) bounds
    forward + backward memory to ``O(B * chunk_size)`` with the same value and gradients;
    ``distributed=True`` under torch.distributed makes each process's rows meet the whole global
    batch and returns this process's share of the global loss (their mean is the global loss;
    see :mod:`contrastkit.distributed`). ``scale`` and ``bias`` are numbers or 0-d tensors
    (which receive their gradients, through the fused kernel too).

    ``negatives`` (a pool ``(M, d)`` or each anchor's own ``(B, k, d)``) add one negative pair
    per anchor ``u_i`` and explicit negative ``n``, ``softplus(s u_i^T n + beta)`` in the sum
    over ``i``; see :mod:`contrastkit.losses.explicit_negatives`.
    """
    return siglip_shared(SharedViews(u, v, negatives), *args, **kwargs)


@register("siglip")
class SigLIP(LearnableLoss):
    """Module form of :func:`siglip`. ``scale`` and ``bias`` are numbers or 0-d tensors of the
    user's; ``learnable=True`` learns both as SigLIP does (parameters ``logit_scale = log(scale)``
    and ``logit_bias``, initialised at the values given, by default SigLIP's ``log 10`` and
    ``-10``, the scale kept at most 100; see :mod:`.learnable`). ``forward(u, v,
    negatives=...)`` takes explicit negatives."""

    hyperparameters = ("scale", "bias")
    learnable_settings = ("scale", "bias")
    supports_chunking = True
    supports_distributed = True
    supports_negatives = True

    def __init__(
        self,
        scale: Setting = SIGLIP_SCALE,
        bias: Setting = SIGLIP_BIAS,
        normalize: bool = True,
        *,
        learnable: bool = False,
        chunk_size: int | None = None,
        distributed: bool = False,
    ) -> None:
        super().__init__()
        self._init_setting("scale", scale, SIGLIP_SCALE, learnable)
        self._init_setting("bias", bias, SIGLIP_BIAS, learnable)
        self.normalize = normalize
        self.chunk_size = check_chunk_size(chunk_size)
        self.distributed = bool(distributed)

    @property
    def scale(self) -> float:
        return self.setting_value("scale")

    @property
    def bias(self) -> float:
        return self.setting_value("bias")

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return siglip_shared(
            shared, scale=self.setting("scale"), bias=self.setting("bias"),
            normalize=self.normalize, chunk_size=self.chunk_size, distributed=self.distributed,
        )

    def extra_repr(self) -> str:
        return self._settings_repr()
