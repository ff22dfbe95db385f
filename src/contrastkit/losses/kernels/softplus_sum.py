"""``softplus_sum``: ``sum_{a,k} softplus(S_ak + bias)`` with ``S = scale * X Y^T``, the negative
term of the sigmoid loss (SigLIP, eq. 9).

The sum is of functions of single entries, so its gradient needs nothing from the rest of the
matrix (no normalizer, unlike a log-sum-exp): the forward takes each row block's derivative
``G = sigmoid(S + bias)`` as soon as the block is formed and applies it at once,
``dX_R = G Y`` and ``dY += G^T X_R`` (without the factor ``scale`` and the incoming
gradient, which the backward multiplies in). Nothing of the matrix's size outlives the forward,
and with ``chunk_size`` each block is formed once: ``3 B^2 d`` multiply-adds, the floor's
count, where recomputing the blocks in the backward took ``4 B^2 d``; memory is one block
(``chunk_size x B``, or ``B x B`` unchunked) and the ``O(B d)`` gradients. The price: a call
made with gradients enabled whose result is never differentiated does the backward's two
products for nothing (under ``torch.no_grad()``, or when no input requires a gradient, they are
skipped). A small matrix (up to ``PLAIN_FACTOR`` times the other kernels' limit) does not come
here: SigLIP computes it in plain autograd (:func:`.common.small_logits` and :func:`softplus`),
reading the positive logits off the matrix.

A tensor ``scale`` (learnable or the user's) multiplies the anchors outside the kernel
(:func:`.common.fold_scale`); a tensor ``bias`` gets its gradient from the kernel,
``sum_{a,k} sigmoid(S_ak + bias)``, the sum of the blocks ``G``.
"""

from __future__ import annotations

import torch

from contrastkit.dtypes import autocast_off, cast

from . import triton_passes, whole_matrix
from .common import (
    Operands,
    fold_scale,
    matmul_dtype,
    one_block,
    refuse_second_derivatives,
    row_blocks,
    scratch_rows,
    take,
)

# The kernel saves memory, not time, below 512 x 512 entries: it takes softplus in slices of
# common.scratch_rows rows to keep one matrix, where plain autograd makes one pass (8 to 24 % faster
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
    return _SoftplusSum.apply(anchors, candidates, scale, bias, chunk_size, mm_dtype,
                              torch.is_grad_enabled())


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``softplus(x) = log(1 + exp(x))``, and ``x`` itself only beyond 40, where the two differ
    by ``exp(-40)``, below float64's rounding (PyTorch's default switches at 20, off by
    ``2e-9``); its autograd derivative is then ``sigmoid(x)`` to the same precision, as the
    kernel's backward computes it. The kernel and SigLIP's plain path both use it."""
    return torch.nn.functional.softplus(x, threshold=40.0)


def _negated(bias: float | torch.Tensor, dtype: torch.dtype, device: torch.device
             ) -> torch.Tensor:
    """``-bias`` as a 0-d tensor of ``dtype``, made on ``device`` (no copy from the host)."""
    if isinstance(bias, torch.Tensor):
        return -bias.detach().to(device=device, dtype=dtype)
    return torch.full((), -bias, dtype=dtype, device=device)


class _SoftplusSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, bias, chunk_size, mm_dtype, grad_enabled):
        # the gradients the caller can ask for (needs_input_grad ignores torch.no_grad())
        need_x, need_y, _, need_bias = (grad_enabled and need
                                        for need in ctx.needs_input_grad[:4])
        with autocast_off(anchors.device.type):
            ops = Operands(anchors, candidates, scale, mm_dtype)
            grad_x, grad_y = ops.empty_grads(need_x, need_y)
            minus_bias = _negated(bias, ops.out_dtype, anchors.device)
            passes = (_one_pass if whole_matrix.applies(anchors.device, chunk_size, mm_dtype,
                                                    (torch.float32, *whole_matrix.HALF))
                      else _row_block_passes)
            total, sigmoid_sum = passes(ops, minus_bias, chunk_size, grad_x, grad_y, need_bias)
        ctx.scale, ctx.out_dtype = scale, ops.out_dtype
        ctx.dtypes = (anchors.dtype, candidates.dtype)
        ctx.bias_like = bias.detach() if need_bias else None  # its gradient's dtype and device
        ctx.save_for_backward(grad_x, grad_y, sigmoid_sum)
        return total

    @staticmethod
    def backward(ctx, grad_total):
        refuse_second_derivatives()
        grad_x, grad_y, sigmoid_sum = ctx.saved_tensors
        factor = ctx.scale * cast(grad_total, ctx.out_dtype)
        return (
            None if grad_x is None else cast(factor * grad_x, ctx.dtypes[0]),
            None if grad_y is None else cast(factor * grad_y, ctx.dtypes[1]),
            None,
            None if sigmoid_sum is None else (grad_total * sigmoid_sum).to(ctx.bias_like),
            None, None, None,
        )


def _one_pass(ops: Operands, minus_bias, chunk_size, grad_x, grad_y, need_bias):
    """The forward on the whole matrix, on a GPU: one Triton pass over ``S`` sums the softplus
    and overwrites ``S`` with its derivative (:func:`.triton_passes.softplus_sigmoid_`), then
    the two products. Returns ``(total, sigmoid sum or None)``."""
    del chunk_size  # unchunked by definition
    need_grad = grad_x is not None or grad_y is not None or need_bias
    block = ops.products()
    total, sigmoid_sum = triton_passes.softplus_sigmoid_(
        block, cast(-minus_bias, torch.float32), need_grad)
    if need_grad:
        ops.grads(block, None, grad_x, grad_y)
    return total, (sigmoid_sum if need_bias else None)


def _row_block_passes(ops: Operands, minus_bias, chunk_size, grad_x, grad_y, need_bias):
    """The forward one row block at a time (all rows unchunked), in eager operators."""
    need_grad = grad_x is not None or grad_y is not None or need_bias
    total = torch.zeros((), dtype=ops.out_dtype, device=ops.x.device)
    sigmoid_sum = torch.zeros_like(total) if need_bias else None
    for rows in row_blocks(ops.x.shape[0], chunk_size):
        block = ops.minus(ops.products(rows), minus_bias)  # S + bias, widened
        # softplus needs a temporary: take it a slice at a time, not a second matrix
        for part in row_blocks(block.shape[0], scratch_rows(block.shape[1], block.device)):
            total += softplus(take(block, part)).sum()
        if need_grad:
            block.sigmoid_()  # d softplus = sigmoid
            ops.grads(block, rows, grad_x, grad_y)
            if sigmoid_sum is not None:  # need_bias
                sigmoid_sum += block.sum()
    return total, sigmoid_sum
