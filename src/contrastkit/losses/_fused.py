"""Fused similarity-matrix kernels with hand-written backward passes.

Every loss of the library reduces a similarity matrix ``S = scale * X Y^T`` (anchors ``X``,
candidates ``Y``) to one number per anchor row, or to a single sum, plus terms that are linear in
the positive pairs and cost ``O(B d)`` (see :func:`positive_logits`). The two reductions needed
are implemented here as ``torch.autograd.Function``s:

- :func:`row_logsumexp`: ``lse_a = log sum_{k not excluded} exp(S_ak)`` (the exp family of
  Def. 3.1: InfoNCE, SimCLR, DCL, DHEL; supervised contrastive plugs in the same way);
- :func:`softplus_sum`: ``sum_{a,k} softplus(S_ak + bias)`` (the sigmoid loss, eq. 9).

Why hand-written: autograd on ``logsumexp(X @ Y.T)`` keeps the logits *and* allocates the
softmax and its gradient in the backward (three ``n_a x n_c`` matrices at the peak). Here the
forward turns the logits into ``exp(S - rowmax)`` in place and saves only that matrix; the
backward multiplies it by the incoming per-row weights through the matrix products
(``dX = diag(w) E Y``, ``dY = E^T diag(w) X``), so one matrix of the batch's size is alive
(under autocast, plus its half-precision copy for the products). The sigmoid loss likewise
keeps only ``sigmoid(S + bias)``, overwritten in place, for its backward.

``chunk_size`` (rows per block) trades time for memory: the forward processes anchors in row
blocks and keeps only the per-row results (``O(n_a)``); the backward recomputes each block's
logits. Forward plus backward then needs ``O(chunk_size * n_c)`` memory instead of
``O(n_a * n_c)``, at the cost of one more matrix product.

Numerics: the products run in the input dtype (or the autocast dtype when autocast is on, so a
GPU uses its bf16/fp16 tensor cores), and every reduction runs in at least float32 with
the row maximum subtracted, so temperatures like 0.01 and half-precision autocast stay finite.
The code uses only device-generic tensor operations and runs unchanged on CUDA.
"""

from __future__ import annotations

from numbers import Integral

import torch


def check_chunk_size(chunk_size: int | None) -> int | None:
    """Return ``chunk_size`` if it is ``None`` or an integer >= 1, else raise ``ValueError``."""
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(
            f"chunk_size must be None (no chunking) or a positive integer number of rows, "
            f"got {chunk_size!r}"
        )
    return int(chunk_size)


def row_logsumexp(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: float,
    excluded: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Per-anchor log-sum-exp of ``scale * anchors @ candidates.T`` over the non-excluded columns.

    Args:
        anchors: ``(n_a, d)``; row ``a`` is anchor ``a``.
        candidates: ``(n_c, d)``; may be the same tensor as ``anchors``.
        scale: the inverse temperature ``1 / t``.
        excluded: ``None`` or an integer tensor ``(n_a, e)``; row ``a`` lists the columns left out
            of anchor ``a``'s sum (itself, its positive, ...). Every row must keep one column.
        chunk_size: rows per block (``None``: one block); see the module docstring.

    Returns:
        ``(n_a,)`` log-sum-exps in ``promote_types(dtype, float32)``.
    """
    mm_dtype = _matmul_dtype(anchors, candidates)
    return _RowLogSumExp.apply(anchors, candidates, scale, excluded, chunk_size, mm_dtype)


def softplus_sum(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: float,
    bias: float,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """``sum_{a,k} softplus(scale * anchors_a . candidates_k + bias)`` as a 0-d tensor.

    Same conventions as :func:`row_logsumexp` (no exclusions: the sigmoid loss treats every pair
    as a negative and corrects the positives with an ``O(B d)`` term).
    """
    mm_dtype = _matmul_dtype(anchors, candidates)
    return _SoftplusSum.apply(anchors, candidates, scale, bias, chunk_size, mm_dtype)


def positive_logits(u: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * u_i . v_i`` per row: the ``O(B d)`` positive-pair term.

    Rounded like the matrix entries of :func:`row_logsumexp` / :func:`softplus_sum` (same
    product dtype, float32 accumulation), so that under half-precision autocast the positive
    and its normalizer carry the same rounding and e.g. SimCLR stays >= 0.
    """
    mm_dtype = _matmul_dtype(u, v)
    out_dtype = accumulate_dtype(mm_dtype)
    x = (u.to(mm_dtype) * scale).to(out_dtype)
    logits = (x * v.to(mm_dtype).to(out_dtype)).sum(dim=1)
    return logits.to(mm_dtype).to(out_dtype)


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype reductions run in: float32, or float64 for float64 inputs."""
    return torch.promote_types(dtype, torch.float32)


def _matmul_dtype(anchors: torch.Tensor, candidates: torch.Tensor) -> torch.dtype:
    """The inputs' dtype, or the autocast dtype for float32 inputs (autocast's own rule)."""
    dtype = torch.promote_types(anchors.dtype, candidates.dtype)
    device = anchors.device.type
    if dtype == torch.float32 and torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return dtype


_SCRATCH_ROWS = 256  # rows per temporary where an operation cannot work in place


def _row_blocks(rows: int, chunk_size: int | None):
    step = rows if chunk_size is None else chunk_size
    for start in range(0, rows, step):
        yield slice(start, min(start + step, rows))


class _Operands:
    """Anchors ``x`` and candidates ``y`` in the product dtype, and the products on them.

    Gradients are accumulated without the factor ``scale``; the caller applies it once.
    """

    def __init__(self, anchors, candidates, scale, mm_dtype):
        self.x = anchors.to(mm_dtype)
        self.y = candidates.to(mm_dtype)
        self.scale = scale
        self.out_dtype = accumulate_dtype(mm_dtype)

    def logits(self, rows: slice, excluded: torch.Tensor | None = None) -> torch.Tensor:
        """``scale * x[rows] y^T`` in the accumulation dtype, excluded entries at -inf."""
        block = ((self.x[rows] * self.scale) @ self.y.T).to(self.out_dtype)
        if excluded is not None:
            block.scatter_(1, excluded[rows], -torch.inf)
        return block

    def empty_grads(self, need_x: bool, need_y: bool):
        """Buffers for the anchors' and candidates' gradients (``None`` where not needed)."""
        grad_x = torch.empty_like(self.x, dtype=self.out_dtype) if need_x else None
        grad_y = torch.zeros_like(self.y, dtype=self.out_dtype) if need_y else None
        return grad_x, grad_y

    def grads(self, block_grad, rows, grad_x, grad_y):
        """``grad_x[rows] = G y`` and ``grad_y += G^T x[rows]`` for the block's gradient ``G``."""
        block_grad = block_grad.to(self.y.dtype)
        if grad_x is not None:
            grad_x[rows] = block_grad @ self.y
        if grad_y is not None:
            grad_y += block_grad.T @ self.x[rows]


def _refuse_second_derivatives() -> None:
    """The backward passes are not themselves differentiable: say so instead of returning a
    silently partial second derivative (``create_graph=True`` turns grad mode on here)."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            "the fused contrastive losses do not support second derivatives (backward with "
            "create_graph=True); use losses.info_sym / losses.ind_add, which are plain autograd"
        )


def _exp_shifted_(block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn ``block`` into ``exp(block - rowmax)`` in place; return (rowmax, row sums)."""
    row_max = block.amax(dim=1, keepdim=True)
    block.sub_(row_max).exp_()
    return row_max.squeeze(1), block.sum(dim=1)


class _RowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, excluded, chunk_size, mm_dtype):
        with torch.autocast(anchors.device.type, enabled=False):
            ops = _Operands(anchors, candidates, scale, mm_dtype)
            lse = torch.empty(anchors.shape[0], dtype=ops.out_dtype, device=anchors.device)
            for rows in _row_blocks(anchors.shape[0], chunk_size):
                block = ops.logits(rows, excluded)
                row_max, row_sum = _exp_shifted_(block)
                lse[rows] = row_sum.log() + row_max
        ctx.scale, ctx.chunk_size, ctx.mm_dtype = scale, chunk_size, mm_dtype
        ctx.dtypes = (anchors.dtype, candidates.dtype)
        if chunk_size is None:
            # one block: keep E = exp(S - rowmax) and its row sums; softmax = E / row_sum
            ctx.save_for_backward(anchors, candidates, block, row_sum)
        else:
            ctx.save_for_backward(anchors, candidates, lse, excluded)
        return lse

    @staticmethod
    def backward(ctx, grad_lse):
        _refuse_second_derivatives()
        anchors, candidates, saved, extra = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with torch.autocast(anchors.device.type, enabled=False):
            ops = _Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            if ctx.chunk_size is None:
                # d lse_a / d S_ak = E_ak / row_sum_a: apply the row weights to the thin
                # operands rather than to the matrix, so E is used as saved, never copied.
                exp_block, row_sum = saved.to(ops.y.dtype), extra
                weight = (grad_lse / row_sum).unsqueeze(1).to(ops.out_dtype)
                grad_x = weight * (exp_block @ ops.y) if need_x else None
                grad_y = exp_block.T @ (weight.to(ops.y.dtype) * ops.x) if need_y else None
            else:
                lse, excluded = saved, extra
                grad_x, grad_y = ops.empty_grads(need_x, need_y)
                for rows in _row_blocks(anchors.shape[0], ctx.chunk_size):
                    block = ops.logits(rows, excluded)
                    block.sub_(lse[rows].unsqueeze(1)).exp_().mul_(grad_lse[rows].unsqueeze(1))
                    ops.grads(block, rows, grad_x, grad_y)
        return (
            None if grad_x is None else (ctx.scale * grad_x).to(ctx.dtypes[0]),
            None if grad_y is None else (ctx.scale * grad_y).to(ctx.dtypes[1]),
            None, None, None, None,
        )


class _SoftplusSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, bias, chunk_size, mm_dtype):
        with torch.autocast(anchors.device.type, enabled=False):
            ops = _Operands(anchors, candidates, scale, mm_dtype)
            total = torch.zeros((), dtype=ops.out_dtype, device=anchors.device)
            for rows in _row_blocks(anchors.shape[0], chunk_size):
                block = ops.logits(rows).add_(bias)
                # softplus needs a temporary: take it a slice at a time, not a second matrix
                for part in _row_blocks(block.shape[0], _SCRATCH_ROWS):
                    total += torch.nn.functional.softplus(block[part]).sum()
        ctx.scale, ctx.bias, ctx.chunk_size, ctx.mm_dtype = scale, bias, chunk_size, mm_dtype
        ctx.dtypes = (anchors.dtype, candidates.dtype)
        if chunk_size is None:
            ctx.save_for_backward(anchors, candidates, block.sigmoid_())  # d softplus = sigmoid
        else:
            ctx.save_for_backward(anchors, candidates)
        return total

    @staticmethod
    def backward(ctx, grad_total):
        _refuse_second_derivatives()
        anchors, candidates, *saved = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with torch.autocast(anchors.device.type, enabled=False):
            ops = _Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            grad_x, grad_y = ops.empty_grads(need_x, need_y)
            if ctx.chunk_size is None:
                ops.grads(saved[0], slice(None), grad_x, grad_y)
            else:
                for rows in _row_blocks(anchors.shape[0], ctx.chunk_size):
                    block = ops.logits(rows).add_(ctx.bias).sigmoid_()
                    ops.grads(block, rows, grad_x, grad_y)
        factor = ctx.scale * grad_total.to(ops.out_dtype)
        return (
            None if grad_x is None else (factor * grad_x).to(ctx.dtypes[0]),
            None if grad_y is None else (factor * grad_y).to(ctx.dtypes[1]),
            None, None, None, None,
        )
