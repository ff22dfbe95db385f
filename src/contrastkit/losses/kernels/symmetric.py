"""``row_logsumexp`` when the candidates are the anchors themselves (SimCLR, DCL, DHEL and SupCon on
one process): the similarity matrix is symmetric, so three quarters of it are computed and kept, and
the backward needs one matrix product instead of two.

Blocks. With ``Z = [Z1; Z2]`` split after ``h = ceil(n / 2)`` rows,
``S = scale * Z Z^T = [[A, B], [B^T, C]]``. Only the top rows ``[A B]`` (``h x n``) and the corner
``C`` are formed; ``B^T`` is read through ``B``. An excluded entry of a bottom row that lies in
``B^T`` is excluded through its mirror image in the top rows, which is why the caller's
exclusions must be symmetric.

One shift. ``F = exp(S - c)`` with a single ``c`` for all rows stays symmetric (a per-row maximum
would not), and ``lse_a = log(sum_k F_ak) + c`` exactly. ``c`` is the centre of the row maxima
``m_a``. This path is taken when the maxima span at most ``log(max) / 2`` of the accumulation
dtype (44 in float32, 354 in float64), so that every ``F_ak <= exp(22)`` and every row sum
``>= exp(-22)``: nothing overflows, and an entry flushes to zero only when it is below
``exp(-65)`` times its row's largest term, far under float32 resolution. Wider spreads (for
example t = 0.01 with very unequal rows) fall back to the general per-row kernel of
:mod:`.row_logsumexp`.

Backward. With ``w_a = grad_lse_a / sum_a``, ``dZ = scale * M Z`` where
``M_ak = F_ak (w_a + w_k)``: each entry is shared by rows ``a`` and ``k`` and carries both rows'
weights. ``M`` is formed a few rows at a time in a scratch block, and
``dZ1 = M_[A B] Z``, ``dZ2 = M_B^T Z1 + M_C Z2``. For ``n = 2B`` that is ``3 B^2 d`` multiply-adds
forward and ``4 B^2 d`` backward, against ``4 B^2 d`` and ``8 B^2 d`` for the general kernel;
memory is ``3/4 n^2`` plus the scratch.

Chunked (``chunk_size < n``, :class:`_ChunkedSymmetricRowLogSumExp`). The rows go in blocks ``R``
of ``chunk_size``; block ``R``'s *strip* is its part of the upper triangle, ``S[R, R.start:]``
(its diagonal tile and every tile right of it), formed once per pass. The strip's row sums go to
the rows ``R``; its column sums right of the diagonal tile go to those columns' rows (the
mirror entries ``S[R.stop:, R]``, never formed). The one shift ``c`` cannot be the centre of
the row maxima, which are known only at the end; it is the largest entry seen so far, the
running maximum of online softmax (:func:`.common.running_exp_strips`): when a strip raises it,
the sums so far are rescaled by ``exp(c_old - c_new)``, an ``O(n)`` multiply, so at the end
``F <= 1`` everywhere and ``c`` is the largest row maximum. The path is kept when every row
sum of ``F`` lies within ``exp(log(max) / 2)`` of 1 (``exp(+-44)`` in float32, ``exp(+-354)`` in
float64), i.e. when the row maxima span about as much as the unchunked condition allows: no row
sum under- or overflows, and an entry that flushes to zero is below ``exp(-43)`` times its
row's sum. Otherwise (e.g. ``t = 0.01`` with very unequal rows) the general chunked path of
:mod:`.row_logsumexp` runs after the strips pass, with the same result. Why not the
alternatives: a first pass for the row maxima would cost ``n^2 d / 2`` more multiply-adds on
every call (a quarter of the total); a bound known in advance (``scale * max |z|^2`` by
Cauchy-Schwarz) needs no pass but sits above every row maximum by the rows' distance from
their best match, so at ``t = 0.01`` DCL and DHEL, whose positives are left out, would fall
back on ordinary batches. The running maximum costs one ``amax`` per strip and no host sync.

The chunked backward recomputes each strip once, weights it into a scratch strip,
``M = F (w_R + w_k)``, and applies it both ways: ``dZ_R += M Z[R.start:]`` and, right of the
diagonal tile, ``dZ[R.stop:] += M_right^T Z_R``. Multiply-adds, with ``r = chunk_size``:
``n d (n + r) / 2`` forward, ``n d (3n + r) / 2`` backward (recomputation included), in all
``n d (2n + r)``; for SimCLR (``n = 2B``) ``8 B^2 d + 2 B r d`` (``8.5 B^2 d`` at
``B = 2048, r = 512``), against ``16 B^2 d`` for the general chunked path (``4 n^2 d``: every
block formed forward and again backward, two backward products) and ``7 B^2 d`` unchunked.
Memory: the strip and its weighted copy (``r x n`` each, in the accumulation dtype), the
gradient, and saved for the backward only ``z``, the row sums and the shift (``O(n d)``).
"""

from __future__ import annotations

import math

import torch

from contrastkit.dtypes import autocast_off

from .common import (
    Operands,
    chunked_logsumexp,
    exclude_,
    logsumexp_block,
    recomputed_softmax_grads,
    refuse_second_derivatives,
    row_blocks,
    running_exp_strips,
    saved_softmax_grads,
    scratch_rows,
    shifted_strips,
    sums_in_range,
    take,
    weighted,
    weighted_scratch,
)


def symmetric_row_logsumexp(
    z: torch.Tensor, scale: float, excluded: torch.Tensor | None, mm_dtype: torch.dtype,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """``row_logsumexp(z, z, scale, excluded, chunk_size)`` for symmetric exclusions; see the
    module docstring. ``mm_dtype`` is the product dtype (the autocast dtype under autocast);
    ``chunk_size`` is ``None`` (one block) or less than ``z``'s row count."""
    if chunk_size is None:
        return _SymmetricRowLogSumExp.apply(z, scale, excluded, mm_dtype)
    return _ChunkedSymmetricRowLogSumExp.apply(z, scale, excluded, chunk_size, mm_dtype)


class _SymmetricRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, scale, excluded, mm_dtype):
        ctx.scale, ctx.mm_dtype, ctx.dtype = scale, mm_dtype, z.dtype
        with autocast_off(z.device.type):
            ops = Operands(z, z, scale, mm_dtype)
            half = (z.shape[0] + 1) // 2
            products = _upper_blocks(ops, half, excluded)
            top, corner = products[1:]
            row_max = torch.cat([
                top.amax(dim=1),
                torch.maximum(top[:, half:].amax(dim=0), corner.amax(dim=1)),
            ])
            shift = _common_shift(row_max, ops.out_dtype)
            ctx.per_row = shift is None
            if shift is None:  # rows too unequal for one shift: the general kernel's forward
                del products, top, corner
                block, row_sum, lse = logsumexp_block(ops, None, excluded)
                ctx.save_for_backward(z, block, row_sum)
                return lse
            _, top, corner = _widened_exp(ops, products, shift)
            del products  # a half-precision storage is no longer needed
            row_sum = torch.cat([top.sum(dim=1), top[:, half:].sum(dim=0) + corner.sum(dim=1)])
        ctx.save_for_backward(z, top, corner, row_sum)
        return row_sum.log() + shift

    @staticmethod
    def backward(ctx, grad_lse):
        refuse_second_derivatives()
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        z, *blocks, row_sum = ctx.saved_tensors
        with autocast_off(z.device.type):
            ops = Operands(z, z, ctx.scale, ctx.mm_dtype)
            weight = (grad_lse * ctx.scale / row_sum).to(ops.out_dtype)  # scale applied here
            if ctx.per_row:
                (block,) = blocks
                grad_rows, grad_columns = saved_softmax_grads(ops, block, weight, True, True)
                grad = grad_rows.add_(grad_columns)
            else:
                top, corner = blocks
                grad = _shared_entry_grad(ops, top, corner, weight)
        return grad.to(ctx.dtype), None, None, None


def _upper_blocks(ops: Operands, half: int, excluded: torch.Tensor | None):
    """The logits ``[A B]`` (rows ``< half``) and ``C`` in the product dtype, excluded entries
    at -inf, as views of one flat storage (returned first)."""
    n = ops.x.shape[0]
    storage = ops.x.new_empty(half * n + (n - half) ** 2, dtype=ops.y.dtype)
    top = storage[: half * n].view(half, n)
    corner = storage[half * n:].view(n - half, n - half)
    scaled, y_t = ops.x * ops.scale, ops.y.T
    torch.mm(scaled[:half], y_t, out=top)
    torch.mm(scaled[half:], y_t[:, half:], out=corner)
    if excluded is not None:
        top.scatter_(1, excluded[:half], -torch.inf)
        # bottom rows: exclusions in C go in; those in B^T are already out through B
        exclude_(corner, excluded[half:], half)
    return storage, top, corner


def _widened_exp(ops: Operands, products, shift: torch.Tensor):
    """``F = exp(S - shift)`` from :func:`_upper_blocks`'s ``(storage, top, corner)``, in the
    accumulation dtype: in place, or for half-precision products into a float32 storage of the
    same layout, widened while the shift is subtracted (:meth:`.Operands.minus`)."""
    storage, top, _ = products
    out = None if storage.dtype == ops.out_dtype else torch.empty_like(storage,
                                                                        dtype=ops.out_dtype)
    storage = ops.minus(storage, shift, out=out).exp_()  # both blocks: they share the storage
    half, n = top.shape
    return (storage, storage[: half * n].view(half, n),
            storage[half * n:].view(n - half, n - half))


def _common_shift(row_max: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """The centre of the row maxima, or ``None`` when they span more than ``log(max) / 2`` of
    ``dtype`` (or a row has no finite entry): then one shift cannot serve every row."""
    low, high = row_max.aminmax()
    if not float(high - low) <= math.log(torch.finfo(dtype).max) / 2:  # NaN fails too
        return None
    return torch.lerp(low, high, 0.5)


def _shared_entry_grad(ops: Operands, top, corner, weight) -> torch.Tensor:
    """``M Z`` with ``M_ak = F_ak (w_a + w_k)``, ``F`` given by its blocks: the corner rows
    first (``dZ2 = M_C Z2``), then each block of top rows adds its share ``M_B^T Z1``."""
    n, half = ops.x.shape[0], top.shape[0]
    grad = torch.empty_like(ops.x, dtype=ops.out_dtype)
    top_grad, bottom_grad = grad[:half], grad[half:]
    top_weight, bottom_weight = weight[:half], weight[half:]
    top_y, bottom_y = ops.y[:half], ops.y[half:]
    block_rows = scratch_rows(n, top.device)
    scratch = weighted_scratch(ops, min(block_rows, half), n)
    for rows in row_blocks(n - half, block_rows):
        part = weighted(take(corner, rows), take(bottom_weight, rows), bottom_weight, scratch)
        ops.product_into(take(bottom_grad, rows), part, bottom_y)
    for rows in row_blocks(half, block_rows):
        part = weighted(take(top, rows), take(top_weight, rows), weight, scratch)
        ops.product_into(take(top_grad, rows), part, ops.y)
        ops.product_into(bottom_grad, part[:, half:].T, take(top_y, rows), accumulate=True)
    return grad


class _ChunkedSymmetricRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, scale, excluded, chunk_size, mm_dtype):
        ctx.scale, ctx.chunk_size, ctx.mm_dtype, ctx.dtype = scale, chunk_size, mm_dtype, z.dtype
        with autocast_off(z.device.type):
            ops = Operands(z, z, scale, mm_dtype)
            row_sum = torch.zeros(z.shape[0], dtype=ops.out_dtype, device=z.device)
            shift = row_sum.new_full((), -torch.inf)
            for rows, strip in running_exp_strips(ops, excluded, chunk_size, shift, [row_sum],
                                                  upper=True):
                row_sum[rows] += strip.sum(dim=1)
                row_sum[rows.stop:] += strip[:, rows.stop - rows.start:].sum(dim=0)
            ctx.per_row = not sums_in_range(row_sum, ops.out_dtype)
            if ctx.per_row:  # rows too unequal for one shift: the general chunked kernel
                lse = chunked_logsumexp(ops, excluded, chunk_size)
                ctx.save_for_backward(z, lse, excluded)
                return lse
        ctx.save_for_backward(z, row_sum, shift, excluded)
        return row_sum.log() + shift

    @staticmethod
    def backward(ctx, grad_lse):
        refuse_second_derivatives()
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        z, *saved = ctx.saved_tensors
        with autocast_off(z.device.type):
            ops = Operands(z, z, ctx.scale, ctx.mm_dtype)
            grad_lse = grad_lse * ctx.scale  # the factor scale of the gradient, applied once
            if ctx.per_row:
                lse, excluded = saved
                grad_rows, grad_columns = recomputed_softmax_grads(
                    ops, grad_lse, lse, excluded, ctx.chunk_size, True, True)
                grad = grad_rows.add_(grad_columns)
            else:
                row_sum, shift, excluded = saved
                grad = _recomputed_shared_entry_grad(ops, grad_lse, row_sum, shift, excluded,
                                                     ctx.chunk_size)
        return grad.to(ctx.dtype), None, None, None, None


def _recomputed_shared_entry_grad(ops: Operands, grad_lse, row_sum, shift, excluded, chunk_size
                                  ) -> torch.Tensor:
    """``M Z`` with ``M_ak = F_ak (w_a + w_k)``, ``w = grad_lse / row_sum``, one strip of the
    upper triangle at a time: the strip of rows ``R`` (columns ``R.start ..``) gives
    ``dZ_R += M_strip Z_{R.start ..}`` and, right of its diagonal tile,
    ``dZ_{R.stop ..} += M_right^T Z_R``."""
    weight = (grad_lse / row_sum).to(ops.out_dtype)
    grad = torch.zeros_like(ops.x, dtype=ops.out_dtype)
    scratch = None
    for rows, strip in shifted_strips(ops, excluded, chunk_size, shift, upper=True):
        if scratch is None:  # the first strip is the widest
            scratch = weighted_scratch(ops, *strip.shape)
        part = weighted(strip, weight[rows], weight[rows.start:], scratch)
        ops.product_into(grad[rows], part, ops.y[rows.start:], accumulate=True)
        ops.product_into(grad[rows.stop:], part[:, rows.stop - rows.start:].T, ops.y[rows],
                         accumulate=True)
    return grad
