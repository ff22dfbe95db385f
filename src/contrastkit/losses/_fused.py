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
keeps only ``sigmoid(S + bias)``, overwritten in place, for its backward. When the candidates
are the anchors themselves (unchunked), :func:`row_logsumexp` runs the symmetric kernel of
:mod:`._fused_symmetric`: three quarters of the matrix and one backward product instead of two.

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

from ._fused_common import (
    SCRATCH_ROWS,
    Operands,
    accumulate_dtype,
    exp_shifted_,
    matmul_dtype,
    refuse_second_derivatives,
    row_blocks,
    saved_softmax_grads,
)
from ._fused_symmetric import symmetric_row_logsumexp


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
            When ``candidates is anchors`` the exclusions must be symmetric (``a`` leaves out
            ``k`` exactly when ``k`` leaves out ``a``), as the self and positive columns are:
            that case runs :mod:`._fused_symmetric`.
        chunk_size: rows per block (``None``: one block); see the module docstring.

    Returns:
        ``(n_a,)`` log-sum-exps in ``promote_types(dtype, float32)``.
    """
    mm_dtype = matmul_dtype(anchors, candidates)
    if candidates is anchors and chunk_size is None and anchors.shape[0] > 1:
        return symmetric_row_logsumexp(anchors, scale, excluded, mm_dtype)
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
    mm_dtype = matmul_dtype(anchors, candidates)
    return _SoftplusSum.apply(anchors, candidates, scale, bias, chunk_size, mm_dtype)


def positive_logits(u: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * u_i . v_i`` per row: the ``O(B d)`` positive-pair term.

    Rounded like the matrix entries of :func:`row_logsumexp` / :func:`softplus_sum` (same
    product dtype, float32 accumulation), so that under half-precision autocast the positive
    and its normalizer carry the same rounding and e.g. SimCLR stays >= 0.
    """
    mm_dtype = matmul_dtype(u, v)
    out_dtype = accumulate_dtype(mm_dtype)
    x = (u.to(mm_dtype) * scale).to(out_dtype)
    logits = (x * v.to(mm_dtype).to(out_dtype)).sum(dim=1)
    return logits.to(mm_dtype).to(out_dtype)


class _RowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, excluded, chunk_size, mm_dtype):
        with torch.autocast(anchors.device.type, enabled=False):
            ops = Operands(anchors, candidates, scale, mm_dtype)
            lse = torch.empty(anchors.shape[0], dtype=ops.out_dtype, device=anchors.device)
            for rows in row_blocks(anchors.shape[0], chunk_size):
                block = ops.logits(rows, excluded)
                row_max, row_sum = exp_shifted_(block)
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
        refuse_second_derivatives()
        anchors, candidates, *saved = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with torch.autocast(anchors.device.type, enabled=False):
            ops = Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            if ctx.chunk_size is None:
                exp_block, row_sum = saved
                grads = saved_softmax_grads(ops, exp_block, grad_lse / row_sum, need_x, need_y)
            else:
                grads = _recomputed_softmax_grads(ops, grad_lse, *saved, ctx.chunk_size,
                                                  need_x, need_y)
        return (
            *(None if grad is None else (ctx.scale * grad).to(dtype)
              for grad, dtype in zip(grads, ctx.dtypes, strict=True)),
            None, None, None, None,
        )


def _recomputed_softmax_grads(ops, grad_lse, lse, excluded, chunk_size, need_x, need_y):
    """Chunked backward: recompute each row block's softmax ``exp(S - lse)``, weight it by
    ``grad_lse`` and apply it, one block at a time."""
    grad_x, grad_y = ops.empty_grads(need_x, need_y)
    for rows in row_blocks(ops.x.shape[0], chunk_size):
        block = ops.logits(rows, excluded)
        block.sub_(lse[rows].unsqueeze(1)).exp_().mul_(grad_lse[rows].unsqueeze(1))
        ops.grads(block, rows, grad_x, grad_y)
    return grad_x, grad_y


class _SoftplusSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, bias, chunk_size, mm_dtype):
        with torch.autocast(anchors.device.type, enabled=False):
            ops = Operands(anchors, candidates, scale, mm_dtype)
            total = torch.zeros((), dtype=ops.out_dtype, device=anchors.device)
            for rows in row_blocks(anchors.shape[0], chunk_size):
                block = ops.logits(rows).add_(bias)
                # softplus needs a temporary: take it a slice at a time, not a second matrix
                for part in row_blocks(block.shape[0], SCRATCH_ROWS):
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
        refuse_second_derivatives()
        anchors, candidates, *saved = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with torch.autocast(anchors.device.type, enabled=False):
            ops = Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            grad_x, grad_y = ops.empty_grads(need_x, need_y)
            if ctx.chunk_size is None:
                ops.grads(saved[0], slice(None), grad_x, grad_y)
            else:
                for rows in row_blocks(anchors.shape[0], ctx.chunk_size):
                    block = ops.logits(rows).add_(ctx.bias).sigmoid_()
                    ops.grads(block, rows, grad_x, grad_y)
        factor = ctx.scale * grad_total.to(ops.out_dtype)
        return (
            None if grad_x is None else (factor * grad_x).to(ctx.dtypes[0]),
            None if grad_y is None else (factor * grad_y).to(ctx.dtypes[1]),
            None, None, None, None,
        )
