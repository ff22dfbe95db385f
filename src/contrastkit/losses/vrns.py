"""VRNS: the auxiliary loss that reduces the variance of negative-pair similarities (Def. 5.7)."""

from __future__ import annotations

from typing import Any

import torch

from contrastkit.checks.scalars import check_dataset_size
from contrastkit.dtypes import autocast_off

from .base import ContrastiveLoss
from .kernels import check_chunk_size
from .kernels.squared_sums import off_diagonal_squared_sum
from .registry import register
from .views import SharedViews, public_form


def vrns_shared(
    shared: SharedViews,
    n: int,
    within_view: bool = False,
    normalize: bool = True,
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    """:func:`vrns` (Def. 5.7) on a :class:`SharedViews`. Its views are those of
    ``shared.batch(normalize, distributed, at_least=float32)``: for float32 and float64 inputs
    the same normalized, gathered batch as the other terms of a composite (SimCLR, InfoNCE,
    SigLIP...) with the same ``normalize`` and ``distributed``; for half-precision inputs a
    float32 copy of its own (the offset ``1/(n-1)`` would round away in half precision)."""
    check_chunk_size(chunk_size)
    dtype = shared.dtype(at_least=torch.float32)
    with autocast_off(shared.device.type):
        batch = shared.batch(normalize, distributed, at_least=torch.float32)
        n = check_dataset_size(n, batch_size=batch.u_all.shape[0])
        offset = 1.0 / (n - 1)
        total = off_diagonal_squared_sum(batch.u, batch.v_all, batch.v, offset, batch.offset)
        pairs = 1
        if within_view:
            total = total + off_diagonal_squared_sum(batch.u, batch.u_all, batch.u, offset,
                                                     batch.offset)
            total = total + off_diagonal_squared_sum(batch.v, batch.v_all, batch.v, offset,
                                                     batch.offset)
            pairs = 3
        local, global_ = batch.u.shape[0], batch.u_all.shape[0]
        return (total / (pairs * local * (global_ - 1))).to(dtype)


@public_form(vrns_shared)
def vrns(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    r"""Variance reduction of negative-pair similarities, Def. 5.7.

    .. math::
        L_{VRNS} = \frac{1}{B(B-1)} \sum_{i\ne j} \Big(u_i^\top v_j + \frac{1}{n-1}\Big)^2

    It pulls every negative-pair similarity towards ``-1/(n-1)``, the full-batch optimum of
    Theorem 5.1, so it equals ``Var(s_neg) + (mean(s_neg) + 1/(n-1))^2`` over the batch's
    negatives. Add it to a contrastive loss with weight ``lambda`` (30 in the paper's Table 1):
    ``losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=len(dataset))``.

    Args:
        u, v: the two views, shape ``(B, d)``.
        n: the **dataset size** (e.g. 50 000 for CIFAR), not the batch size, as in the authors'
            code; must be ``>= B``.
        within_view: also include the within-view pairs ``(u_i, u_j)`` and ``(v_i, v_j)``,
            ``i != j``; the mean is then over all ``3 B (B - 1)`` negative pairs.
        normalize: L2-normalize the rows first.
        chunk_size: accepted for the same interface as the other losses; VRNS forms a
            ``B x B`` matrix only when it is smaller than ``2 B d`` (see below), so its memory
            is ``O(B d + d^2)`` whatever the chunk.
        distributed: under torch.distributed, this process's rows meet the whole global batch
            and the function returns this process's share of the global loss (their mean is
            the global loss; see :mod:`contrastkit.distributed`).

    The term is computed in float32 (or float64 when either view is float64) with autocast
    disabled: in half precision the offset ``1/(n-1)`` (2e-5 for CIFAR) would round away. The
    sum over all pairs is expanded as
    ``sum_ij (a_i.b_j + c)^2 = <A^T A, B^T B> + 2c (sum_i a_i).(sum_j b_j) + |A||B| c^2``
    (``d x d`` Gram matrices, ``O(B d^2)`` work instead of ``O(B^2 d)``) when that is the
    cheaper, i.e. when ``B > 2 d`` for equal batches; a smaller batch sums its ``B x B``
    similarities directly. The ``i = j`` terms are then subtracted; the products are
    accumulated in float64 so the subtraction loses nothing.
    """
    return vrns_shared(SharedViews(u, v), *args, **kwargs)


@register("vrns", regularizer=True)
class VRNS(ContrastiveLoss):
    """Module form of :func:`vrns`; ``n`` is the dataset size."""

    hyperparameters = ("n",)
    supports_chunking = True
    supports_distributed = True

    def __init__(
        self,
        n: int,
        within_view: bool = False,
        normalize: bool = True,
        *,
        chunk_size: int | None = None,
        distributed: bool = False,
    ) -> None:
        super().__init__()
        self.n = check_dataset_size(n)
        self.within_view = within_view
        self.normalize = normalize
        self.chunk_size = check_chunk_size(chunk_size)
        self.distributed = bool(distributed)

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return vrns_shared(
            shared, n=self.n, within_view=self.within_view, normalize=self.normalize,
            chunk_size=self.chunk_size, distributed=self.distributed,
        )

    def extra_repr(self) -> str:
        return f"n={self.n}, within_view={self.within_view}"
