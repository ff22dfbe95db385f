"""``two_way_logsumexp``: the log-sum-exps of the rows *and* of the columns of one
``S = scale * X Y^T``, chunked or not: InfoNCE's two directions on one process (anchors ``u``
against candidates ``v``, and ``v`` against ``u``, whose matrix is ``S^T``).

Called one direction at a time, the general chunked kernel of :mod:`.row_logsumexp` forms every
entry of ``S`` four times (once forward and once backward per direction) and runs four backward
products: ``8 B^2 d`` multiply-adds for ``B`` pairs. Here each row block's strip
``F = exp(S[R] - c)`` is formed once per pass, with one shift ``c`` for all entries: its row
sums are the rows' normalizers, its column sums add to the columns'. The backward recomputes the
strip once and weights each entry by both of its directions, ``M_ak = F_ak (w_a + w'_k)`` with
``w = grad_rows / row_sums`` and ``w' = grad_columns / column_sums``, then ``dX_R = M Y`` and
``dY += M^T X_R``: ``B^2 d`` forward, ``3 B^2 d`` backward, ``4 B^2 d`` in all (against
``6 B^2 d`` for the two unchunked calls, which keep one matrix each). Memory: the strip and its
weighted copy, formed :func:`.common.scratch_rows` rows at a time (``chunk_size x B`` and
``SCRATCH_ROWS x B`` on the CPU), the gradients, and saved only the inputs, the sums and the
shift.
Unchunked (``chunk_size`` ``None`` or at least ``B``), the one strip ``F`` is saved instead of
recomputed: ``3 B^2 d`` in all, the floor's count, and one ``B x B`` matrix at the peak where
the two one-way calls keep two (``6 B^2 d``). The weighted block is kept small for memory
and, depending on the process, for time: a ``B x B`` copy made on each call can be returned to
the system by the C allocator when freed and faulted in again on the next call. In a process
that runs the loss alone that took about 40 % of the kernel's time beyond the floor's
(InfoNCE at ``B = 1024``: 2.7x to 2.1x the floor in ``benchmarks/losses.py --timing``); where
other work keeps the allocator's memory, as in the full benchmark, nothing was lost.

The shift, as in the chunked symmetric kernel (:mod:`.symmetric`), is the largest entry seen so
far, the sums rescaled when it grows (:func:`.common.running_exp_strips`); the path is kept when
every row and column sum lies within ``exp(log(max) / 2)`` of 1 (``exp(+-44)`` in float32).
Otherwise both directions run through the general chunked kernel, with the same result. The
exclusions (``excluded``, the positive's column when it is left out) must be symmetric, as the
own column ``(i, i)`` is: row ``k`` of ``S^T`` then excludes the same columns as row ``k`` of
``S``.
"""

from __future__ import annotations

import torch

from contrastkit.dtypes import autocast_off, cast

from . import whole_matrix
from .common import (
    Operands,
    chunked_logsumexp,
    fold_scale,
    matmul_dtype,
    one_block,
    plain_autograd,
    plain_logits,
    recomputed_softmax_grads,
    refuse_second_derivatives,
    row_blocks,
    running_exp_strips,
    scratch_rows,
    shifted_strips,
    sums_in_range,
    take,
    weighted,
    weighted_scratch,
)


def two_way_logsumexp(
    x: torch.Tensor,
    y: torch.Tensor,
    scale: float | torch.Tensor,
    excluded: torch.Tensor | None = None,
    chunk_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(row_logsumexp(x, y, ...), row_logsumexp(y, x, ...))`` with the same ``scale``,
    ``excluded`` (symmetric: see the module docstring) and ``chunk_size``, from one pass over
    ``S = scale * x y^T`` (see the module docstring). ``x`` and ``y`` have as many rows."""
    x, y, scale = fold_scale(x, y, scale)
    chunk_size, mm_dtype = one_block(chunk_size, x.shape[0]), matmul_dtype(x, y)
    if plain_autograd(x.shape[0], y.shape[0], chunk_size, x.device):  # .common: the thresholds
        with autocast_off(x.device.type):
            logits = plain_logits(x, y, scale, mm_dtype, excluded)
            return logits.logsumexp(dim=1), logits.logsumexp(dim=0)
    if whole_matrix.applies(x.device, chunk_size, mm_dtype):  # a GPU: Triton's passes
        return whole_matrix.two_way_logsumexp(x, y, scale, excluded, mm_dtype)
    return _TwoWayLogSumExp.apply(x, y, scale, excluded, chunk_size, mm_dtype)


class _TwoWayLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, scale, excluded, chunk_size, mm_dtype):
        ctx.scale, ctx.chunk_size, ctx.mm_dtype = scale, chunk_size, mm_dtype
        ctx.dtypes = (x.dtype, y.dtype)
        with autocast_off(x.device.type):
            ops = Operands(x, y, scale, mm_dtype)
            row_sum = torch.zeros(x.shape[0], dtype=ops.out_dtype, device=x.device)
            column_sum = torch.zeros(y.shape[0], dtype=ops.out_dtype, device=x.device)
            shift = row_sum.new_full((), -torch.inf)
            sums = [row_sum, column_sum]
            for rows, strip in running_exp_strips(ops, excluded, chunk_size, shift, sums):
                take(row_sum, rows).copy_(strip.sum(dim=1))
                column_sum += strip.sum(dim=0)
            ctx.per_row = not sums_in_range(torch.cat([row_sum, column_sum]), ops.out_dtype)
            if ctx.per_row:  # one shift cannot serve every row: the general chunked kernel
                lse = (chunked_logsumexp(ops, excluded, chunk_size),
                       chunked_logsumexp(_transposed(ops), excluded, chunk_size))
                ctx.save_for_backward(x, y, *lse, excluded)
                return lse
        # unchunked, the one strip F = exp(S - c) is kept for the backward instead of recomputed
        kept = strip if chunk_size is None else None
        ctx.save_for_backward(x, y, row_sum, column_sum, shift, excluded, kept)
        return row_sum.log() + shift, column_sum.log() + shift

    @staticmethod
    def backward(ctx, grad_rows, grad_columns):
        refuse_second_derivatives()
        x, y, *saved = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        with autocast_off(x.device.type):
            ops = Operands(x, y, ctx.scale, ctx.mm_dtype)
            # the factor scale of the gradients, applied once
            grad_rows, grad_columns = grad_rows * ctx.scale, grad_columns * ctx.scale
            if ctx.per_row:
                lse_rows, lse_columns, excluded = saved
                grad_x, grad_y = recomputed_softmax_grads(
                    ops, grad_rows, lse_rows, excluded, ctx.chunk_size, need_x, need_y)
                grad_y_rows, grad_x_columns = recomputed_softmax_grads(
                    _transposed(ops), grad_columns, lse_columns, excluded, ctx.chunk_size,
                    need_y, need_x)
                grads = (_add(grad_x, grad_x_columns), _add(grad_y, grad_y_rows))
            else:
                row_sum, column_sum, shift, excluded, kept = saved
                grads = _two_way_grads(ops, grad_rows, grad_columns, row_sum, column_sum, shift,
                                       excluded, kept, ctx.chunk_size, need_x, need_y)
        return (
            *(None if grad is None else cast(grad, dtype)
              for grad, dtype in zip(grads, ctx.dtypes, strict=True)),
            None, None, None, None,
        )


def _transposed(ops: Operands) -> Operands:
    """The operands of ``S^T = scale * y x^T``."""
    return Operands(ops.y, ops.x, ops.scale, ops.y.dtype)


def _add(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    return a if a is None or b is None else a.add_(b)  # both None, or neither


def _two_way_grads(ops: Operands, grad_rows, grad_columns, row_sum, column_sum, shift,
                   excluded, kept, chunk_size, need_x, need_y):
    """``dX = M Y`` and ``dY = M^T X`` with ``M_ak = F_ak (w_a + w'_k)``, one recomputed strip
    of rows at a time, or from the ``kept`` strip ``F`` (unchunked: all rows)."""
    row_weight = (grad_rows / row_sum).to(ops.out_dtype)
    column_weight = (grad_columns / column_sum).to(ops.out_dtype)
    grad_x, grad_y = ops.empty_grads(need_x, need_y)
    scratch = None
    strips = (((None, kept),) if kept is not None
              else shifted_strips(ops, excluded, chunk_size, shift))
    for rows, strip in strips:
        block_rows = scratch_rows(strip.shape[1], strip.device)
        if scratch is None:  # the first strip is as large as any
            scratch = weighted_scratch(ops, min(block_rows, strip.shape[0]), strip.shape[1])
        for part, block in _scratch_parts(rows, strip, block_rows):
            ops.grads(weighted(block, take(row_weight, part), column_weight, scratch), part,
                      grad_x, grad_y)
    return grad_x, grad_y


def _scratch_parts(rows: slice | None, strip: torch.Tensor, block_rows: int):
    """``(part, strip[part])`` for the blocks of at most ``block_rows`` rows of a strip whose
    rows are ``rows`` of the matrix (``None``: all rows), ``part`` in the matrix's row numbers:
    the pieces a backward weights one at a time into a scratch block of ``block_rows`` rows
    (:func:`weighted`; :func:`.common.scratch_rows`), instead of a copy as large as the strip
    (on the CPU a fresh allocation that large is returned to the system when freed, and the
    next call pays its page faults again)."""
    if rows is None:  # the kept strip: the whole matrix (one part: None)
        for part in row_blocks(strip.shape[0], block_rows):
            yield part, take(strip, part)
        return
    for first in range(rows.start, rows.stop, block_rows):
        part = slice(first, min(first + block_rows, rows.stop))
        yield part, strip[part.start - rows.start: part.stop - rows.start]
