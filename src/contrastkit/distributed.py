"""The one place that gathers embeddings across processes (torch.distributed).

Under data parallelism (DDP) every process holds a slice of the global batch. A contrastive loss
must see the whole global batch, so each process gathers the others' embeddings with
:func:`gather`, computes the loss on the global batch, and backpropagates into its own slice.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    """True when torch.distributed is initialized with more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


class _GatherWithGrad(torch.autograd.Function):
    """all_gather forward; backward sums the incoming gradients over processes (all_reduce)
    and returns this process's slice."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        gathered = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, x.contiguous())
        ctx.rows = x.shape[0]
        return torch.cat(gathered, dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        start = dist.get_rank() * ctx.rows
        return grad[start : start + ctx.rows]


def gather(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` (same shape on every process) over processes along dim 0.

    Differentiable: when every process computes the same loss on the gathered batch and DDP
    averages parameter gradients over processes, the parameters receive exactly the gradient
    of the single-process loss on the concatenated batch. Outside torch.distributed (or with
    one process) it returns ``x`` unchanged.
    """
    if not is_distributed():
        return x
    return _GatherWithGrad.apply(x)
