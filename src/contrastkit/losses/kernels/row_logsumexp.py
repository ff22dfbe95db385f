"""``row_logsumexp``: ``lse_a = log sum_{k not excluded} exp(S_ak)`` with ``S = scale * X Y^T``
(anchors ``X``, candidates ``Y``), the normalizer of the exp family of Def. 3.1 (InfoNCE, SimCLR,
DCL, DHEL) and of supervised contrastive losses.

Why hand-written: autograd on ``logsumexp(X @ Y.T)`` keeps the logits *and* allocates the
softmax and its gradient in the backward (three ``n_a x n_c`` matrices at the peak). Here the
forward turns the logits into ``exp(S - rowmax)`` in place and saves only that matrix; the
backward multiplies it by the incoming per-row weights through the matrix products
(``dX = diag(w) E Y``, ``dY = E^T diag(w) X``), so one matrix of the batch's size is alive
(under autocast, plus its half-precision copy for the products). When the candidates are the
anchors themselves, :func:`row_logsumexp` runs the symmetric kernel of :mod:`.symmetric`,
chunked or not: each entry of the upper triangle formed once per pass, and one backward product
per entry instead of two.

``chunk_size`` (rows per block) trades time for memory: the forward processes anchors in row
blocks and keeps only the per-row results (``O(n_a)``); the backward recomputes each block's
logits. Forward plus backward then needs ``O(chunk_size * n_c)`` memory instead of
``O(n_a * n_c)``, at the cost of one more matrix product: ``4 n_a n_c d`` multiply-adds
instead of ``3 n_a n_c d``. A chunk of at least ``n_a`` rows is one block: the unchunked path,
which is then within that bound. A small matrix (at most ``PLAIN_AUTOGRAD_ENTRIES`` entries,
unchunked) is computed in plain autograd instead, with the same rounding
(:func:`.common.plain_logits`): there the fixed cost of a hand-written kernel outweighs it.
"""

from __future__ import annotations

import torch

from contrastkit.dtypes import autocast_off, cast

from . import whole_matrix
from .common import (
    Operands,
    chunked_logsumexp,
    fold_scale,
    logsumexp_block,
    matmul_dtype,
    one_block,
    plain_autograd,
    plain_logits,
    recomputed_softmax_grads,
    refuse_second_derivatives,
    saved_softmax_grads,
)
from .symmetric import symmetric_row_logsumexp


def row_logsumexp(
    anchors: torch.Tensor,
    candidates: torch.Tensor,
    scale: float | torch.Tensor,
    excluded: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Per-anchor log-sum-exp of ``scale * anchors @ candidates.T`` over the non-excluded columns.

    Args:
        anchors: ``(n_a, d)``; row ``a`` is anchor ``a``.
        candidates: ``(n_c, d)``; may be the same tensor as ``anchors``.
        scale: the inverse temperature ``1 / t``: a float, or a 0-d tensor (learnable or the
            user's), which then receives its gradient (see :func:`.common.fold_scale`).
        excluded: ``None`` or an integer tensor ``(n_a, e)``; row ``a`` lists the columns left out
            of anchor ``a``'s sum (itself, its positive, ...). Every row must keep one column.
            When ``candidates is anchors`` the exclusions must be symmetric (``a`` leaves out
            ``k`` exactly when ``k`` leaves out ``a``), as the self and positive columns are:
            that case runs :mod:`.symmetric`.
        chunk_size: rows per block (``None``, or at least ``n_a``: one block); see the module
            docstring.

    Returns:
        ``(n_a,)`` log-sum-exps in ``promote_types(dtype, float32)``.
    """
    anchors, candidates, scale = fold_scale(anchors, candidates, scale)
    mm_dtype = matmul_dtype(anchors, candidates)
    chunk_size = one_block(chunk_size, anchors.shape[0])
    if plain_autograd(anchors.shape[0], candidates.shape[0], chunk_size, anchors.device):
        with autocast_off(anchors.device.type):
            return plain_logits(anchors, candidates, scale, mm_dtype, excluded).logsumexp(dim=1)
    if candidates is anchors and anchors.shape[0] > 1:
        return symmetric_row_logsumexp(anchors, scale, excluded, mm_dtype, chunk_size)
    if whole_matrix.applies(anchors.device, chunk_size, mm_dtype):  # a GPU: Triton's passes
        return whole_matrix.row_logsumexp(anchors, candidates, scale, excluded, mm_dtype)
    return _RowLogSumExp.apply(anchors, candidates, scale, excluded, chunk_size, mm_dtype)


class _RowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, anchors, candidates, scale, excluded, chunk_size, mm_dtype):
        with autocast_off(anchors.device.type):
            ops = Operands(anchors, candidates, scale, mm_dtype)
            if chunk_size is None:
                block, row_sum, lse = logsumexp_block(ops, None, excluded)
            else:
                lse = chunked_logsumexp(ops, excluded, chunk_size)
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
        with autocast_off(anchors.device.type):
            ops = Operands(anchors, candidates, ctx.scale, ctx.mm_dtype)
            grad_lse = grad_lse * ctx.scale  # the factor scale of both gradients, applied once
            if ctx.chunk_size is None:
                exp_block, row_sum = saved
                grads = saved_softmax_grads(ops, exp_block, grad_lse / row_sum, need_x, need_y)
            else:
                lse, excluded = saved
                grads = recomputed_softmax_grads(ops, grad_lse, lse, excluded, ctx.chunk_size,
                                                 need_x, need_y)
        return (
            *(None if grad is None else cast(grad, dtype)
              for grad, dtype in zip(grads, ctx.dtypes, strict=True)),
            None, None, None, None,
        )
