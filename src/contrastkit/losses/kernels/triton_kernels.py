"""The Triton kernels of :mod:`.triton_passes`, undecorated: that module compiles them with
``triton.jit`` for a GPU or hands them to Triton's interpreter for CPU tensors, and imports this
one only when a kernel is first needed (it imports Triton). What each computes is said in the
launcher of the same name there."""

import triton.language as tl


def partial_logsumexp(S, ex, maxima, sums, n_out, n_in, per_split, stride_out, stride_in,
                      EXCLUDED: tl.constexpr, BLOCK_OUT: tl.constexpr,
                      BLOCK_IN: tl.constexpr):
    # outputs [block of BLOCK_OUT] x the program's split of the reduced index
    out = tl.program_id(0) * BLOCK_OUT + tl.arange(0, BLOCK_OUT)
    split = tl.program_id(1)
    valid = out < n_out
    safe = tl.where(valid, out, 0).to(tl.int64)  # offsets past 2^31 at B = 65536
    best = tl.full((BLOCK_OUT,), float("-inf"), tl.float32)
    total = tl.zeros((BLOCK_OUT,), tl.float32)
    start = split * per_split
    stop = tl.minimum(start + per_split, n_in)
    for first in range(start, stop, BLOCK_IN):
        inner = (first + tl.arange(0, BLOCK_IN)).to(tl.int64)
        keep = valid[:, None] & (inner[None, :] < stop)
        for j in tl.static_range(EXCLUDED):
            column = tl.load(ex + safe * EXCLUDED + j)
            keep = keep & (inner[None, :] != column[:, None])
        s = tl.load(S + safe[:, None] * stride_out + inner[None, :] * stride_in,
                    mask=keep, other=0.0).to(tl.float32)
        s = tl.where(keep, s, float("-inf"))
        new_best = tl.maximum(best, tl.max(s, axis=1))
        anchor = tl.where(new_best == float("-inf"), 0.0, new_best)
        total = total * tl.exp(best - anchor) + tl.sum(tl.exp(s - anchor[:, None]), axis=1)
        best = new_best
    tl.store(maxima + split * n_out + out, best, mask=valid)
    tl.store(sums + split * n_out + out, total, mask=valid)


def softmax_weights(S, M, ex, row_lse, row_grad, column_lse, column_grad, n_rows, n_columns,
                    stride_row, stride_column, EXCLUDED: tl.constexpr, TWO_WAY: tl.constexpr,
                    BLOCK_ROWS: tl.constexpr, BLOCK_COLUMNS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    columns = tl.program_id(1) * BLOCK_COLUMNS + tl.arange(0, BLOCK_COLUMNS)
    inside = (rows[:, None] < n_rows) & (columns[None, :] < n_columns)
    safe_rows = tl.where(rows < n_rows, rows, 0).to(tl.int64)  # offsets past 2^31
    safe_columns = tl.where(columns < n_columns, columns, 0).to(tl.int64)
    s = tl.load(S + safe_rows[:, None] * stride_row + safe_columns[None, :] * stride_column,
                mask=inside, other=0.0).to(tl.float32)
    lse = tl.load(row_lse + safe_rows)
    m = tl.load(row_grad + safe_rows)[:, None] * tl.exp(s - lse[:, None])
    if TWO_WAY:
        lse_k = tl.load(column_lse + safe_columns)
        m += tl.load(column_grad + safe_columns)[None, :] * tl.exp(s - lse_k[None, :])
    for j in tl.static_range(EXCLUDED):
        column = tl.load(ex + safe_rows * EXCLUDED + j)
        m = tl.where(columns[None, :] == column[:, None], 0.0, m)
    tl.store(M + safe_rows[:, None] * n_columns + safe_columns[None, :],
             m.to(M.dtype.element_ty), mask=inside)


def softplus_sigmoid(S, bias, softplus_sums, sigmoid_sums, n_rows, n_columns, stride_row,
                     WRITE: tl.constexpr, BLOCK_ROWS: tl.constexpr,
                     BLOCK_COLUMNS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    valid = rows < n_rows
    safe = tl.where(valid, rows, 0).to(tl.int64)  # offsets past 2^31 at B = 65536
    b = tl.load(bias)
    softplus_total = tl.zeros((BLOCK_ROWS,), tl.float32)
    sigmoid_total = tl.zeros((BLOCK_ROWS,), tl.float32)
    for first in range(0, n_columns, BLOCK_COLUMNS):
        columns = first + tl.arange(0, BLOCK_COLUMNS)
        inside = valid[:, None] & (columns[None, :] < n_columns)
        address = S + safe[:, None] * stride_row + columns[None, :]
        x = tl.load(address, mask=inside, other=0.0).to(tl.float32) + b
        # softplus(x) = max(x, 0) + log1p(exp(-|x|)), log1p by its series where it is small
        small = tl.exp(-tl.abs(x))
        log1p = tl.where(small < 1e-4, small * (1.0 - 0.5 * small), tl.log(1.0 + small))
        softplus_total += tl.sum(tl.where(inside, tl.maximum(x, 0.0) + log1p, 0.0), axis=1)
        if WRITE:
            sigmoid = tl.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))
            sigmoid_total += tl.sum(tl.where(inside, sigmoid, 0.0), axis=1)
            tl.store(address, sigmoid.to(S.dtype.element_ty), mask=inside)
    tl.store(softplus_sums + rows, softplus_total, mask=valid)
    tl.store(sigmoid_sums + rows, sigmoid_total, mask=valid)
