"""Pieces shared by the fused kernels (:mod:`.row_logsumexp`, :mod:`.symmetric`, :mod:`.two_way`,
:mod:`.softplus_sum`): the ``chunk_size`` check, dtypes, row blocks, the products on anchors and
candidates, the ``O(B d)`` positive-pair logits, the general chunked log-sum-exp (forward and
recomputing backward, per-row shifts), and the strips of the chunked kernels that use one shift
for the whole matrix (its running maximum, the range check, the entries' two-way weighting).

Where a GPU and the CPU want different things (:func:`accelerated`): how far the plain-autograd
path reaches (:func:`plain_autograd`), how large the backward's blocks are
(:func:`scratch_rows`), and whether a half-precision product is widened by its own subtraction
(:meth:`Operands.minus`) and the weighted blocks kept in half precision
(:func:`weighted_scratch`). Why, in short: on a GPU a loss is launch-bound up to a few thousand
rows and memory-bound beyond, so fewer operators, no host sync and fewer passes over the
matrix are what count; on two CPU cores the arithmetic and the allocator do. The values are
the same either way, to rounding."""

from __future__ import annotations

import math
from numbers import Integral

import torch

from contrastkit.dtypes import autocast_off, cast, promoted

# Rows per temporary where an operation cannot work in place (the backward's weighted blocks,
# SigLIP's softplus slices), on the CPU: a fresh allocation as large as the matrix is returned
# to the system when freed and faulted in again on the next call (two_way.py). On a GPU the
# caching allocator keeps freed memory, and each block costs a handful of kernel launches and
# Python calls that take longer than the block's arithmetic (256 rows of a 16 384-column bf16
# matrix are a few microseconds of an H200): there a block holds up to GPU_SCRATCH_ENTRIES
# entries (:func:`scratch_rows`), 8 blocks for InfoNCE's 16 384^2 matrix instead of 64.
SCRATCH_ROWS = 256
GPU_SCRATCH_ENTRIES = 1 << 25
# Up to this many matrix entries (anchors x candidates) a kernel computes in plain autograd
# (:func:`plain_logits`): there the fused kernels' fixed cost (an autograd Function, the range
# check's host sync, a dozen small operators) is more than the matrix work it saves. 256 x 256
# on the CPU: InfoNCE and DHEL up to B = 256, SimCLR, DCL and SupCon (2B x 2B) up to B = 128;
# SigLIP's reaches further (.softplus_sum.PLAIN_FACTOR). Measured by benchmarks/small_path.py
# (its section in docs/benchmarks.md).
PLAIN_AUTOGRAD_ENTRIES = 256 * 256
# On a GPU the plain path reaches GPU_PLAIN_FACTOR times further, 4096 x 4096 (InfoNCE up to
# B = 4096, SimCLR up to 2048). There a loss is launch-bound up to a few thousand rows: the
# kernels' dozens of small operators and the range check's host sync (which stops the CPU from
# queueing work ahead of the GPU) cost more than the matrix; the plain path is one product and
# one fused reduction (cross_entropy, logsumexp, softplus), three products with its backward
# (open_clip's ClipLoss runs six, and was faster than the kernels there on an H200). Its memory,
# a few B x B matrices, is a few hundred MiB at most. benchmarks/gpu_losses.py measures it.
GPU_PLAIN_FACTOR = 256


def check_chunk_size(chunk_size: int | None) -> int | None:
    """Return ``chunk_size`` if it is ``None`` or an integer >= 1, else raise ``ValueError``."""
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None (no chunking) or a positive integer number "
                         f"of rows, got {chunk_size!r}")
    return int(chunk_size)


def one_block(chunk_size: int | None, rows: int) -> int | None:
    """``chunk_size``, or ``None`` when one block of ``chunk_size`` rows covers all ``rows``: the
    kernels then take their unchunked path (its memory, ``O(rows * columns)``, is within the
    chunk's bound), with no recomputation in the backward."""
    return None if chunk_size is None or chunk_size >= rows else chunk_size


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype reductions run in: float32, or float64 for float64 inputs."""
    return promoted(dtype, torch.float32)


def matmul_dtype(anchors: torch.Tensor, candidates: torch.Tensor) -> torch.dtype:
    """The inputs' dtype, or the autocast dtype for float32 inputs (autocast's own rule)."""
    dtype = promoted(anchors.dtype, candidates.dtype)
    device = anchors.device.type
    if dtype == torch.float32 and torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return dtype


def plain_autograd(rows: int, columns: int, chunk_size: int | None, device: torch.device,
                   factor: int = 1) -> bool:
    """Whether a ``rows x columns`` matrix on ``device`` takes the plain-autograd path: one block
    of ``chunk_size`` rows covers it (:func:`one_block`) and it has at most
    :data:`PLAIN_AUTOGRAD_ENTRIES` entries times ``factor`` on the CPU (a kernel whose
    hand-written path gains less there passes a larger ``factor``), times
    :data:`GPU_PLAIN_FACTOR` on any other device."""
    scale = GPU_PLAIN_FACTOR if accelerated(device) else factor
    return (one_block(chunk_size, rows) is None
            and rows * columns <= scale * PLAIN_AUTOGRAD_ENTRIES)


def scratch_rows(columns: int, device: torch.device) -> int:
    """Rows per block of a temporary with ``columns`` columns on ``device``:
    :data:`SCRATCH_ROWS` on the CPU, up to :data:`GPU_SCRATCH_ENTRIES` entries elsewhere."""
    if not accelerated(device):
        return SCRATCH_ROWS
    return max(SCRATCH_ROWS, GPU_SCRATCH_ENTRIES // max(columns, 1))


def accelerated(device: torch.device) -> bool:
    """Whether ``device`` takes the GPU's choices (:func:`plain_autograd`, :func:`scratch_rows`,
    :meth:`Operands.minus`, :func:`weighted_scratch`): any device but the CPU. The tests make the
    CPU take them too."""
    return device.type != "cpu"


def plain_logits(anchors: torch.Tensor, candidates: torch.Tensor, scale: float,
                 mm_dtype: torch.dtype, excluded: torch.Tensor | None = None) -> torch.Tensor:
    """``S = scale * X Y^T`` rounded as the kernels round it (:meth:`Operands.products`: the
    product in ``mm_dtype``), widened to the accumulation dtype, excluded entries at -inf, in
    plain autograd: the small-matrix path of the kernels (:func:`plain_autograd`), whose
    caller reduces it with autograd operators (``logsumexp``, ``softplus``) under autocast
    disabled. Its second derivatives are autograd's own."""
    x, y = cast(anchors, mm_dtype), cast(candidates, mm_dtype)
    logits = cast((x * scale) @ y.T, accumulate_dtype(mm_dtype))
    return logits if excluded is None else logits.scatter(1, excluded, -torch.inf)


def small_logits(anchors: torch.Tensor, candidates: torch.Tensor, scale: float | torch.Tensor,
                 excluded: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`plain_logits` with the kernels' product dtype, autocast off: the whole matrix of a
    loss that takes the small path (:func:`plain_autograd`) and reads its positive logits off
    it (InfoNCE, SimCLR and SigLIP: entries of the matrix, so rounded like their normalizers by
    construction) before one fused autograd operator reduces it (``cross_entropy``,
    ``softplus``). Computing the ``O(B d)`` positive term apart costs more operators than it
    saves where their dispatch is most of the time."""
    anchors, candidates, scale = fold_scale(anchors, candidates, scale)
    mm_dtype = matmul_dtype(anchors, candidates)
    with autocast_off(anchors.device.type):
        return plain_logits(anchors, candidates, scale, mm_dtype, excluded)


def positive_logits(u: torch.Tensor, v: torch.Tensor, scale: float | torch.Tensor
                    ) -> torch.Tensor:
    """``scale * u_i . v_i`` per row (over the last axis; ``u`` ``(B, 1, d)`` against explicit
    negatives ``(B, k, d)`` gives ``(B, k)``): the ``O(B d)`` positive-pair term.

    Rounded like the matrix entries of :func:`.row_logsumexp.row_logsumexp` and
    :func:`.softplus_sum.softplus_sum` (same product dtype, float32 accumulation), so that under
    half-precision autocast the positive and its normalizer carry the same rounding (SimCLR >= 0).
    """
    mm_dtype = matmul_dtype(u, v)
    out_dtype = accumulate_dtype(mm_dtype)
    x = cast(scaled(cast(u, mm_dtype), scale), out_dtype)
    logits = (x * cast(cast(v, mm_dtype), out_dtype)).sum(dim=-1)
    return cast(cast(logits, mm_dtype), out_dtype)


def fold_scale(anchors: torch.Tensor, candidates: torch.Tensor, scale: float | torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """For a tensor ``scale`` (a learnable or user-owned one), ``(anchors', candidates', 1.0)``
    with ``anchors' candidates'^T = scale * anchors candidates^T``: the scale multiplies the
    ``O(n d)`` operands, so autograd carries its gradient past the hand-written kernels
    (``sqrt(scale)`` on both when the candidates are the anchors, which keeps that case
    symmetric). A float ``scale`` is returned as it is, with no extra operation."""
    if not isinstance(scale, torch.Tensor):
        return anchors, candidates, scale
    if candidates is anchors:
        both = scaled(anchors, scale.sqrt())
        return both, both, 1.0
    return scaled(anchors, scale), candidates, 1.0


def scaled(x: torch.Tensor, factor: float | torch.Tensor) -> torch.Tensor:
    """``x * factor`` in ``x``'s dtype. A tensor ``factor`` (a learnable or user-owned scale)
    multiplies ``x`` in at least float32, rounded once to ``x``'s dtype: with half-precision
    ``x``, ``x * factor`` would round the factor itself to half precision and sum its gradient,
    a reduction over all of ``x``'s entries, in half precision. A float ``factor`` is one
    operator, in ``x``'s dtype."""
    if not isinstance(factor, torch.Tensor):
        return x * factor
    return cast(cast(x, accumulate_dtype(x.dtype)) * factor, x.dtype)


def row_blocks(rows: int, chunk_size: int | None, start: int = 0):
    """Slices of at most ``chunk_size`` rows covering ``start .. rows - 1``; ``None`` (all rows,
    see :func:`take`) when one block covers every row, so the single-block case, the common one
    at small batches, dispatches no view per block."""
    if start == 0 and (chunk_size is None or chunk_size >= rows):
        yield None
        return
    step = rows - start if chunk_size is None else chunk_size
    for first in range(start, rows, max(step, 1)):
        yield slice(first, min(first + step, rows))


def take(x: torch.Tensor, rows: slice | None) -> torch.Tensor:
    """``x[rows]``, or ``x`` itself for ``rows=None`` (all rows: no view dispatched)."""
    return x if rows is None else x[rows]


class Operands:
    """Anchors ``x`` and candidates ``y`` in the product dtype, and the products on them.

    Gradients are accumulated without the factor ``scale``; the caller applies it once.
    """

    def __init__(self, anchors, candidates, scale, mm_dtype):
        self.x = cast(anchors, mm_dtype)
        self.y = cast(candidates, mm_dtype)
        self.scale = scale
        self.out_dtype = accumulate_dtype(mm_dtype)

    def products(self, rows: slice | None = None, excluded: torch.Tensor | None = None,
                 first_column: int = 0) -> torch.Tensor:
        """The logits ``scale * x[rows] y[first_column:]^T`` (all rows for ``rows=None``),
        excluded entries at -inf, as the product gives them, in the product dtype: a
        half-precision block is widened by :meth:`minus` while it subtracts a shift."""
        block = (take(self.x, rows) * self.scale) @ self.y[first_column:].T
        if excluded is None:
            return block
        if first_column == 0:
            return block.scatter_(1, take(excluded, rows), -torch.inf)
        return exclude_(block, take(excluded, rows), first_column)

    def minus(self, block: torch.Tensor, shift: torch.Tensor,
              out: torch.Tensor | None = None) -> torch.Tensor:
        """``block - shift`` in the accumulation dtype (``shift`` a 0-d tensor or one that
        broadcasts), into ``out`` if given. A block in that dtype is changed in place. A
        half-precision one (from :meth:`products`) is widened: on a GPU by the subtraction
        itself, which reads it once and writes the difference in the accumulation dtype, the
        same values as widening it first without the widened copy's pass over the matrix; on
        the CPU, which widens fast but mixes dtypes in one operator slowly (3 to 4 times the
        copy and the subtraction at 1024 x 2048), by a copy first."""
        shift = cast(shift, self.out_dtype)
        if block.dtype != self.out_dtype and not accelerated(block.device):
            block = cast(block, self.out_dtype) if out is None else out.copy_(block)
            out = None
        if block.dtype == self.out_dtype and out is None:
            return block.sub_(shift)
        # a 0-d shift would take the block's dtype (type promotion): give it a dimension
        return torch.sub(block, shift.reshape(1) if shift.dim() == 0 else shift, out=out)

    def product_into(self, out: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
                     accumulate: bool = False) -> None:
        """``out = left @ right`` (or ``out += left @ right``) with the product in the product
        dtype; written in place when ``out`` has that dtype, as it does outside autocast."""
        left, right = cast(left, self.y.dtype), cast(right, self.y.dtype)
        if out.dtype != left.dtype:
            if accumulate:
                out.add_(left @ right)
            else:
                out.copy_(left @ right)
        elif accumulate:
            out.addmm_(left, right)
        else:
            torch.mm(left, right, out=out)

    def empty_grads(self, need_x: bool, need_y: bool):
        """Buffers for the anchors' and candidates' gradients (``None`` where not needed)."""
        grad_x = torch.empty_like(self.x, dtype=self.out_dtype) if need_x else None
        grad_y = torch.zeros_like(self.y, dtype=self.out_dtype) if need_y else None
        return grad_x, grad_y

    def grads(self, block_grad, rows, grad_x, grad_y):
        """``grad_x[rows] = G y`` and ``grad_y += G^T x[rows]`` for the block's gradient ``G``
        (``rows=None``: all rows)."""
        block_grad = cast(block_grad, self.y.dtype)
        if grad_x is not None:
            self.product_into(take(grad_x, rows), block_grad, self.y)
        if grad_y is not None:
            self.product_into(grad_y, block_grad.T, take(self.x, rows), accumulate=True)


def exclude_(block: torch.Tensor, columns: torch.Tensor, first_column: int) -> torch.Tensor:
    """Write -inf into ``block`` (whose column ``j`` is column ``first_column + j`` of the
    matrix) at each row's listed ``columns`` that fall inside it. Without a data-dependent
    index: an amin-scatter of -inf (inside) or +inf (no change) per listed column."""
    columns = columns - first_column
    inside = (columns >= 0) & (columns < block.shape[1])
    marks = torch.full(columns.shape, torch.inf, dtype=block.dtype, device=block.device)
    marks.masked_fill_(inside, -torch.inf)
    return block.scatter_reduce_(1, columns.clamp_(0, block.shape[1] - 1), marks, reduce="amin")


def logsumexp_block(ops: Operands, rows: slice | None, excluded: torch.Tensor | None):
    """A row block's logits (all rows for ``rows=None``) turned into ``E = exp(S - rowmax)``
    (in the accumulation dtype), with its row sums and log-sum-exps."""
    block = ops.products(rows, excluded)
    row_max = cast(block.amax(dim=1, keepdim=True), ops.out_dtype)  # exact
    block = ops.minus(block, row_max).exp_()
    row_sum = block.sum(dim=1)
    return block, row_sum, row_sum.log().add_(row_max.squeeze(1))


def chunked_logsumexp(ops: Operands, excluded: torch.Tensor | None, chunk_size: int
                      ) -> torch.Tensor:
    """The per-row log-sum-exps, one block of ``chunk_size`` rows at a time (each with its own
    row maxima), keeping only the ``(n_a,)`` result."""
    lse = torch.empty(ops.x.shape[0], dtype=ops.out_dtype, device=ops.x.device)
    for rows in row_blocks(ops.x.shape[0], chunk_size):
        take(lse, rows).copy_(logsumexp_block(ops, rows, excluded)[2])
    return lse


def recomputed_softmax_grads(ops: Operands, grad_lse, lse, excluded, chunk_size, need_x, need_y):
    """Chunked backward of :func:`chunked_logsumexp`: recompute each row block's softmax
    ``exp(S - lse)``, weight it by ``grad_lse`` and apply it, one block at a time."""
    grad_x, grad_y = ops.empty_grads(need_x, need_y)
    for rows in row_blocks(ops.x.shape[0], chunk_size):
        block = ops.minus(ops.products(rows, excluded), take(lse, rows).unsqueeze(1))
        block.exp_().mul_(take(grad_lse, rows).unsqueeze(1))
        ops.grads(block, rows, grad_x, grad_y)
    return grad_x, grad_y


def _logit_strips(ops: Operands, excluded: torch.Tensor | None, chunk_size: int | None,
                  upper: bool):
    """For each block of ``chunk_size`` rows, ``(rows, S[rows])`` over all columns, or with
    ``upper`` over the columns ``rows.start ..`` (the rows' part of the upper triangle, diagonal
    tile included); excluded entries at -inf; in the product dtype (:meth:`Operands.products`).
    ``chunk_size=None``: one strip of all rows (``rows`` is ``None``; not with ``upper``)."""
    for rows in row_blocks(ops.x.shape[0], chunk_size):
        yield rows, ops.products(rows, excluded, rows.start if upper else 0)


def running_exp_strips(ops: Operands, excluded: torch.Tensor | None, chunk_size: int,
                       shift: torch.Tensor, sums: list[torch.Tensor], upper: bool = False):
    """The forward pass of the chunked kernels that use one shift ``c`` for the whole matrix:
    ``(rows, F)`` per strip (see :func:`_logit_strips`), ``F = exp(S[rows] - c)`` with ``c`` the
    largest entry so far, kept in ``shift`` (a 0-d tensor, -inf to start; updated in place).
    Whenever ``c`` grows, the tensors in ``sums`` (the caller's sums of the strips before) are
    rescaled in place by ``exp(c_old - c_new)``, so that they stay sums of ``exp(S - c)`` for the
    current ``c``: the running maximum of online softmax, one for all entries. No product before
    the first strip, no assumption on the norms, and no host sync."""
    for rows, strip in _logit_strips(ops, excluded, chunk_size, upper):
        largest = torch.maximum(shift, strip.amax())  # of the product itself: exact
        factor = (shift - largest).exp_()
        for total in sums:
            total.mul_(factor)
        shift.copy_(largest)
        yield rows, ops.minus(strip, shift).exp_()


def shifted_strips(ops: Operands, excluded: torch.Tensor | None, chunk_size: int, shift,
                   upper: bool = False):
    """The strips of :func:`running_exp_strips` again (the backward), ``F = exp(S[rows] - c)``
    with its final ``c``: ``(rows, F)``."""
    for rows, strip in _logit_strips(ops, excluded, chunk_size, upper):
        yield rows, ops.minus(strip, shift).exp_()


def sums_in_range(sums: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether every sum of ``exp(S - shift)`` lies within ``exp(log(max) / 2)`` of 1 either way
    in ``dtype`` (``exp(+-44)`` in float32; false for a zero, infinite or NaN sum): the condition
    for one shift to serve every row (with the shift the largest entry, every sum is at most the
    row's length, and at least ``exp(-44)`` when the row's own maximum is within 44 of it)."""
    bound = math.log(torch.finfo(dtype).max) / 2
    low, high = torch.stack(sums.log().aminmax()).tolist()
    return -bound <= low and high <= bound


def weighted(block, row_weight, column_weight, scratch) -> torch.Tensor:
    """``block * (row_weight[:, None] + column_weight[None, :])``, written into ``scratch``
    (a buffer at least as large as ``block``; see :func:`weighted_scratch`).

    In a half-precision ``scratch`` the terms are formed as ``F w_a + F w'_k``, each in float32
    and rounded when stored: a weight alone can exceed float16's range (``grad / row_sum`` with
    a row sum near ``exp(-40)`` at ``t = 0.01``), its product with an entry of ``F`` (at most
    the row's, and the column's, sum) cannot."""
    out = scratch[: block.shape[0], : block.shape[1]]
    if out.dtype == block.dtype:
        return torch.add(row_weight.unsqueeze(1), column_weight, out=out).mul_(block)
    return torch.mul(block, row_weight.unsqueeze(1), out=out).addcmul_(block, column_weight)


def weighted_scratch(ops: Operands, rows: int, columns: int) -> torch.Tensor:
    """The buffer of :func:`weighted` for blocks of up to ``rows x columns``. On a GPU it has the
    product dtype: the weighted block is computed in float32 and stored rounded (twice: a first
    term, then the sum), ready for the backward products, where a float32 buffer needs a
    half-precision copy of each block (a write and a read more of a memory-bound pass). On the CPU,
    whose elementwise operators convert half precision slowly (storing into bfloat16 took 2.4 times
    as long as the float32 pass and its copy at 1024 x 1024), the accumulation dtype."""
    dtype = ops.y.dtype if accelerated(ops.x.device) else ops.out_dtype
    return ops.x.new_empty(rows, columns, dtype=dtype)


def saved_softmax_grads(ops, exp_block, weight, need_x, need_y):
    """``dX = diag(w) E Y`` and ``dY = E^T diag(w) X`` from the saved ``E = exp(S - rowmax)`` and
    the row weights ``w`` (``grad_lse / row_sum``, times ``scale`` where the caller folds it in):
    the weights go on the thin operands rather than on the matrix, so ``E`` is used as saved, never
    copied."""
    exp_block = cast(exp_block, ops.y.dtype)
    weight = cast(weight, ops.out_dtype).unsqueeze(1)
    grad_x = weight * (exp_block @ ops.y) if need_x else None
    grad_y = exp_block.T @ (cast(weight, ops.y.dtype) * ops.x) if need_y else None
    return grad_x, grad_y


def refuse_second_derivatives() -> None:
    """The backward passes are not themselves differentiable: say so instead of returning a
    silently partial second derivative (``create_graph=True`` turns grad mode on here)."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            "the fused contrastive losses do not support second derivatives (backward with "
            "create_graph=True); use losses.info_sym / losses.ind_add, which are plain autograd"
        )
