"""``softplus_sum``: ``sum_{a,k} softplus(S_ak + bias)`` with ``S = scale * X Y^T``, the negative
term of the sigmoid loss (SigLIP, eq. 9).

Like :mod:`.row_logsumexp` it keeps a single matrix of the batch's size: the forward overwrites
the logits with ``sigmoid(S + bias)`` in place (the derivative of softplus) and saves only that
for the backward; with ``chunk_size`` the backward recomputes each row block instead. A small
matrix (up to ``PLAIN_FACTOR`` times the other kernels' limit) does not come here: SigLIP
computes it in plain autograd (:func:`.common.small_logits` and :func:`softplus`), reading the
positive logits off the matrix.

A tensor ``scale`` (learnable or the user's) multiplies the anchors outside the kernel
(:func:`.common.fold_scale`); a tensor ``bias`` gets its gradient from the kernel,
``sum_{a,k} sigmoid(S_ak + bias)``, the sum of the matrix the backward already holds.
"""

from __future__ import annotations

import torch

from contrastkit.dtypes import autocast_off, cast

from .common import (
    SCRATCH_ROWS,
    Operands,
    fold_scale,
    matmul_dtype,
    one_block,
    refuse_second_derivatives,
    row_blocks,
    take,
)

# The kernel saves memory, not time, below 512 x 512 entries: it takes softplus in slices of
# SCRATCH_ROWS rows to keep one matrix, where plain autograd makes one pass (8 to 24 % faster
# from B = 64 to 512 on 2 CPU threads, as fast at 768: benchmarks/small_path.py). So SigLIP's
# plain path (siglip.py) reaches 4 x PLAIN_AUTOGRAD_ENTRIES.
PLAIN_FACTOR = 4


def softplus_sum(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: float | torch.Tensor,
    bias: float | torch.Tensor,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """``sum_{a,k} softplus(scale * anchors_a . candidates_k + bias)`` as a 0-d tensor.

    Same conventions as :func:`.row_logsumexp.row_logsumexp` (no exclusions: the sigmoid loss
    treats every pair as a negative and corrects the positives with an ``O(B d)`` term).
    ``scale`` and ``bias`` may be 0-d tensors, which then receive their gradients.
    """
    anchors, candidates, scale = fold_scale(anchors, candidates, scale)
    mm_dtype = matmul_dtype(anchors, candidates)
    chunk_size = one_block(chunk_size, anchors.shape[0])
    return _SoftplusSum.apply(anchors, candidates, scale, bias, chunk_size, mm_dtype)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``softplus(x) = log(1 + exp(x))``, and ``x`` itself only beyond 40, where the two differ
    by ``exp(-40)``, below float64's rounding (PyTorch's default switches at 20, off by
    ``2e-9``); its autograd derivative is then ``sigmoid(x)`` to the same precision, as the
    kernel's backward computes it. The kernel and SigLIP's plain path both use it."""
    return torch.nn.functional.softplus(x, threshold=40.0)


class _SoftplusSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, bias, chunk_size, mm_dtype):
        with autocast_off(anchors.device.type):
            ops = Operands(anchors, candidates, scale, mm_dtype)
            total = torch.zeros((), dtype=ops.out_dtype, device=anchors.device)
            for rows in row_blocks(anchors.shape[0], chunk_size):
                block = ops.logits(rows).add_(bias)
                # softplus needs a temporary: take it a slice at a time, not a second matrix
                for part in row_blocks(block.shape[0], SCRATCH_ROWS):
                    total += softplus(take(block, part)).sum()
        if isinstance(bias, torch.Tensor):
            bias = bias.detach()  # its gradient is returned by backward
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
        with autocast_off(anchors.device.type):
            ops = Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            grad_x, grad_y = ops.empty_grads(need_x, need_y)
            # d/d bias of sum softplus(S + bias) = sum sigmoid(S + bias), for a tensor bias only
            need_bias, sigmoid_sum = ctx.needs_input_grad[3], 0.0
            if ctx.chunk_size is None:
                ops.grads(saved[0], None, grad_x, grad_y)
                if need_bias:
                    sigmoid_sum = saved[0].sum()
            else:
                for rows in row_blocks(anchors.shape[0], ctx.chunk_size):
                    block = ops.logits(rows).add_(ctx.bias).sigmoid_()
                    ops.grads(block, rows, grad_x, grad_y)
                    if need_bias:
                        sigmoid_sum = sigmoid_sum + block.sum()
        factor = ctx.scale * cast(grad_total, ops.out_dtype)
        return (
            None if grad_x is None else cast(factor * grad_x, ctx.dtypes[0]),
            None if grad_y is None else cast(factor * grad_y, ctx.dtypes[1]),
            None,
            (grad_total * sigmoid_sum).to(ctx.bias) if need_bias else None,
            None, None,
        )
