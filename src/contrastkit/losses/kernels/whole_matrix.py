"""The unchunked log-sum-exp kernels on a GPU: the matrix product by the BLAS, every pass over
the matrix by one Triton kernel (:mod:`.triton_passes`).

``S = scale * X Y^T`` is formed once, in the product dtype (bfloat16 under bf16 autocast), and
kept for the backward as the product wrote it: half the memory of the eager kernels' float32
``exp(S - c)``. The forward reads it once per direction (the row log-sum-exps, and for InfoNCE's
two directions the column ones); the backward reads it once more to write the weighted matrix
``M`` in the product dtype and runs the floor's two products, ``dX = M Y`` and ``dY = M^T X``.
Each reduction has its own running maximum, so no shift is shared across rows and nothing is
read back to the host.

Same results as the eager kernels of :mod:`.row_logsumexp` and :mod:`.two_way` to float32
rounding (the same rounded products, float32 sums); taken where :func:`applies` says.
"""

from __future__ import annotations

import torch

from contrastkit.dtypes import autocast_off, cast

from . import triton_passes
from .common import Operands, refuse_second_derivatives

HALF = (torch.bfloat16, torch.float16)


def applies(device: torch.device, chunk_size: int | None, mm_dtype: torch.dtype,
            dtypes: tuple[torch.dtype, ...] = HALF) -> bool:
    """Whether an unchunked matrix of products in ``mm_dtype`` (one of ``dtypes``) on
    ``device`` takes the Triton passes (:func:`.triton_passes.usable`).

    The log-sum-exps take them in half precision only: on an H200 (issue 35's benchmark) they
    saved 15 % of InfoNCE's time in bfloat16 from B = 16 384, while in float32 they were as fast
    as the eager kernels and kept twice the memory (``S`` and ``M`` in float32, where the eager
    kernel keeps one float32 matrix). The symmetric kernel (the candidates are the anchors:
    SimCLR, DCL) keeps its eager form, which forms three quarters of the matrix: the whole
    matrix and its weighted copy were slower in both dtypes. SigLIP's softplus sum takes them in
    float32 too (:mod:`.softplus_sum`), faster in both dtypes with no more memory."""
    return chunk_size is None and mm_dtype in dtypes and triton_passes.usable(device)


def row_logsumexp(anchors, candidates, scale: float, excluded, mm_dtype) -> torch.Tensor:
    """:func:`.row_logsumexp.row_logsumexp` unchunked, the candidates not the anchors."""
    return _LogSumExp.apply(anchors, candidates, scale, excluded, mm_dtype, False)[0]


def two_way_logsumexp(x, y, scale: float, excluded, mm_dtype):
    """:func:`.two_way.two_way_logsumexp` unchunked: the rows' and the columns' log-sum-exps."""
    return _LogSumExp.apply(x, y, scale, excluded, mm_dtype, True)


class _LogSumExp(torch.autograd.Function):
    """The rows' log-sum-exps of ``S`` (and the columns', ``two_way``) from one kept ``S``."""

    @staticmethod
    def forward(ctx, x, y, scale, excluded, mm_dtype, two_way):
        with autocast_off(x.device.type):
            ops = Operands(x, y, scale, mm_dtype)
            matrix = ops.products()
            lse = (triton_passes.logsumexp(matrix, excluded),
                   triton_passes.logsumexp(matrix, excluded, columns=True) if two_way else None)
        ctx.scale, ctx.mm_dtype, ctx.dtypes = scale, mm_dtype, (x.dtype, y.dtype)
        ctx.save_for_backward(x, y, matrix, excluded, *lse)
        return tuple(None if part is None else cast(part, ops.out_dtype) for part in lse)

    @staticmethod
    def backward(ctx, grad_rows, grad_columns):
        refuse_second_derivatives()
        x, y, matrix, excluded, lse_rows, lse_columns = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with autocast_off(x.device.type):
            ops = Operands(x, y, ctx.scale, ctx.mm_dtype)
            weights = triton_passes.softmax_weights(
                matrix, excluded, lse_rows, grad_rows * ctx.scale, lse_columns,
                None if lse_columns is None else grad_columns * ctx.scale)
            grad_x, grad_y = ops.empty_grads(need_x, need_y)
            ops.grads(weights, None, grad_x, grad_y)
        return (*(None if grad is None else cast(grad, dtype)
                  for grad, dtype in zip((grad_x, grad_y), ctx.dtypes, strict=True)),
                None, None, None, None)
