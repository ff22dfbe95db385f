"""The one place that gathers embeddings across processes (torch.distributed).

Under data parallelism (DDP) every process holds a slice of the global batch. A contrastive loss
must see the whole global batch, so each process gathers the others' embeddings with
:func:`gather` and backpropagates into its own slice.

How the losses use it (``distributed=True`` on every loss function and module): process ``r``
gathers the candidates of all processes but keeps **only its own rows as anchors** (the "local
loss" of open_clip and lightly), so it forms an ``N x (W N)`` block of the similarity matrix, not
the whole ``W N x W N`` one. It returns its share ``L_r`` of the global loss, with
``mean_r L_r = L(global batch)`` exactly, and the gather's backward sums every process's
gradient into the slice that produced it. With DDP (which averages parameter gradients over
processes) the parameters therefore receive exactly the gradient of the single-process loss on
the concatenated batch. To log the global value, average ``L_r`` over processes
(:func:`all_reduce_mean`).
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    """True when torch.distributed is initialized with more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    """Number of processes (1 outside torch.distributed)."""
    return dist.get_world_size() if is_distributed() else 1


def rank() -> int:
    """This process's index (0 outside torch.distributed)."""
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


def gather_rows(x: torch.Tensor, what: str = "batch size",
                hint: str = "use drop_last=True in the DataLoader") -> tuple[torch.Tensor, int]:
    """:func:`gather` ``x`` and return it with the global index of this process's first row.

    Every process must hold the same number of rows (a ``ValueError`` names the sizes
    otherwise, rather than letting the collective hang or mix up rows; ``what`` names the
    rows in it, ``hint`` says what to do). Outside torch.distributed it returns ``(x, 0)``.
    """
    if not is_distributed():
        return x, 0
    sizes = torch.tensor([x.shape[0]], device=x.device)
    all_sizes = [torch.empty_like(sizes) for _ in range(world_size())]
    dist.all_gather(all_sizes, sizes)
    counts = [int(size) for size in all_sizes]
    if len(set(counts)) != 1:
        raise ValueError(
            f"every process must pass the same {what} to a distributed loss, got {counts} "
            f"({hint})"
        )
    return gather(x), rank() * x.shape[0]


def gather_pool(negatives: torch.Tensor) -> torch.Tensor:
    """:func:`gather_rows` of a pool of explicit negatives ``(M, d)``, which every anchor meets:
    each process's anchors then meet every process's pool (the single-process loss with the
    pools concatenated). Every process must hold as many (a ``ValueError`` says so)."""
    gathered, _ = gather_rows(negatives, what="number of shared negatives (rows of negatives)",
                              hint="give every process a pool of one size")
    return gathered


def all_reduce_sum(value: torch.Tensor) -> torch.Tensor:
    """The sum of ``value`` over processes (a detached copy; ``value`` itself is unchanged).

    Exact for integer tensors: losses use it for global counts (e.g. SupCon's number of anchors
    with a positive), so that every process normalizes, and raises, alike.
    """
    return _all_reduce(value, dist.ReduceOp.SUM)


def all_reduce_max(value: torch.Tensor) -> torch.Tensor:
    """The elementwise maximum of ``value`` over processes (a detached copy); the training loop
    uses it so that a stop signal reaching any process stops all of them."""
    return _all_reduce(value, dist.ReduceOp.MAX)


def _all_reduce(value: torch.Tensor, op) -> torch.Tensor:
    value = value.detach().clone()
    if is_distributed():
        dist.all_reduce(value, op=op)
    return value


def all_reduce_mean(value: torch.Tensor) -> torch.Tensor:
    """The mean of ``value`` over processes (a detached copy; ``value`` itself is unchanged).

    Use it to log the global loss from each process's share.
    """
    return all_reduce_sum(value) / world_size()
