"""Triton kernels for the elementwise passes over a whole similarity matrix on a CUDA GPU.

Eager PyTorch has no operator that exponentiates a half-precision matrix and sums it in float32
in one pass: the eager kernels widen the product to a float32 matrix first, then shift,
exponentiate, sum its rows and columns and weight it for the backward, each a pass over a
matrix twice the product's size. These kernels read the product ``S`` (in its own dtype, as
the matrix product wrote it) once per pass and keep everything else in float32 registers:

- :func:`logsumexp`: per-row (or, through the transposed strides, per-column) log-sum-exp of
  ``S`` with the excluded entries left out, from a running maximum (online softmax), so no
  common shift and no range check are needed;
- :func:`softmax_weights`: the backward's weighted matrix
  ``M_ak = g_a exp(S_ak - lse_a) [+ h_k exp(S_ak - lse'_k)]``, written in the product dtype,
  ready for the two products ``dX = M Y`` and ``dY = M^T X``;
- :func:`softplus_sigmoid_`: ``sum softplus(S + bias)`` (per row, float32) and ``S`` replaced
  in place by ``sigmoid(S + bias)``, the sigmoid loss's forward and its gradient in one pass.

The arithmetic is that of the eager kernels (``S`` rounded as the product gives it, float32
reductions), so both agree to float32 rounding. Only :mod:`.whole_matrix` calls these, and only
where :func:`usable` says so: on CUDA with Triton installed and :data:`ENABLED` (a benchmark
flips it to time the eager kernels beside these). On the CPU the same kernels run in Triton's
interpreter when :data:`INTERPRET_ON_CPU` is set in a process started with
``TRITON_INTERPRET=1``, which is how the tests check them on a machine without a GPU.
"""

from __future__ import annotations

import functools
import importlib.util
from types import SimpleNamespace

import torch

ENABLED = True
INTERPRET_ON_CPU = False

# rows x columns of a tile: the reductions walk a row block along its columns (128 contiguous
# entries of 2 or 4 bytes per load); the column reductions read tiles whose contiguous side is
# their 128 outputs, split over the rows in enough programs to fill the GPU.
_ROWS, _COLUMNS = 32, 128
_MIN_PROGRAMS = 1024


@functools.cache
def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def usable(device: torch.device) -> bool:
    """Whether a matrix on ``device`` takes these kernels: CUDA (or the CPU under
    :data:`INTERPRET_ON_CPU`), Triton installed and :data:`ENABLED`."""
    on_device = device.type == "cuda" or (device.type == "cpu" and INTERPRET_ON_CPU)
    return ENABLED and on_device and _triton_installed()


def logsumexp(matrix: torch.Tensor, excluded: torch.Tensor | None = None,
              columns: bool = False) -> torch.Tensor:
    """Float32 log-sum-exp of each row of ``matrix`` (each column with ``columns=True``), the
    entries ``(a, excluded[a, j])`` left out. With ``columns`` the exclusions must be symmetric
    (row ``k`` of ``excluded`` then lists the rows left out of column ``k``)."""
    view = matrix.T if columns else matrix
    outputs, reduced = view.shape
    # a column's outputs are contiguous in memory: let a tile's long side run along them
    block_out, block_in = (_COLUMNS, _ROWS) if columns else (_ROWS, _COLUMNS)
    blocks = _ceil(outputs, block_out)
    splits = max(1, min(_ceil(_MIN_PROGRAMS, blocks), _ceil(reduced, 4 * block_in)))
    maxima = torch.empty(splits, outputs, dtype=torch.float32, device=matrix.device)
    sums = torch.empty_like(maxima)
    ex, width = _exclusions(excluded, matrix)
    _kernels().partial_logsumexp[(blocks, splits)](
        view, ex, maxima, sums, outputs, reduced, _ceil(reduced, splits), view.stride(0),
        view.stride(1), EXCLUDED=width, BLOCK_OUT=block_out, BLOCK_IN=block_in,
    )
    if splits == 1:
        return sums[0].log().add_(maxima[0])
    largest = maxima.amax(dim=0)  # the splits' partial sums, each rescaled to the largest maximum
    return (sums * (maxima - largest).exp()).sum(dim=0).log() + largest


def softmax_weights(matrix: torch.Tensor, excluded: torch.Tensor | None,
                    row_lse: torch.Tensor, row_grad: torch.Tensor,
                    column_lse: torch.Tensor | None = None,
                    column_grad: torch.Tensor | None = None) -> torch.Tensor:
    """A new matrix like ``matrix`` (its dtype) holding
    ``M_ak = row_grad_a exp(S_ak - row_lse_a) + column_grad_k exp(S_ak - column_lse_k)``
    (the second term only when ``column_lse`` is given), 0 at the excluded entries."""
    rows, columns = matrix.shape
    weights = torch.empty_like(matrix, memory_format=torch.contiguous_format)
    ex, width = _exclusions(excluded, matrix)
    two_way = column_lse is not None
    if column_lse is None:  # one way: the kernel reads no column terms
        column_lse, column_grad = row_lse, row_grad
    assert column_grad is not None, "column_lse comes with its column_grad"
    _kernels().softmax_weights[
        (_ceil(rows, _ROWS), _ceil(columns, _COLUMNS))
    ](
        matrix, weights, ex, _f32(row_lse), _f32(row_grad),
        _f32(column_lse), _f32(column_grad),
        rows, columns, matrix.stride(0), matrix.stride(1),
        EXCLUDED=width, TWO_WAY=two_way, BLOCK_ROWS=_ROWS, BLOCK_COLUMNS=_COLUMNS,
    )
    return weights


def softplus_sigmoid_(matrix: torch.Tensor, bias: torch.Tensor, need_sigmoid: bool):
    """``(sum softplus(S + bias), sum sigmoid(S + bias))`` in float32 (0-d; the second ``None``
    without ``need_sigmoid``), with ``matrix`` (contiguous) overwritten by ``sigmoid(S + bias)``
    where ``need_sigmoid``. ``bias`` is a 0-d float32 tensor on the matrix's device."""
    rows, columns = matrix.shape
    softplus_sums = torch.empty(rows, dtype=torch.float32, device=matrix.device)
    sigmoid_sums = torch.empty_like(softplus_sums)
    _kernels().softplus_sigmoid[(_ceil(rows, _ROWS),)](
        matrix, bias, softplus_sums, sigmoid_sums, rows, columns, matrix.stride(0),
        WRITE=need_sigmoid, BLOCK_ROWS=_ROWS, BLOCK_COLUMNS=_COLUMNS,
    )
    return softplus_sums.sum(), (sigmoid_sums.sum() if need_sigmoid else None)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32).contiguous()


def _exclusions(excluded: torch.Tensor | None, like: torch.Tensor):
    """The exclusions as a contiguous int64 table and its width (a dummy and 0 without)."""
    if excluded is None:
        return like.new_empty(1, dtype=torch.int64), 0
    return excluded.to(torch.int64).contiguous(), excluded.shape[1]


@functools.cache
def _kernels() -> SimpleNamespace:
    """The kernels of :mod:`.triton_kernels` compiled by ``triton.jit`` (run by Triton's
    interpreter, on CPU tensors, in a process started with ``TRITON_INTERPRET=1``). Imported
    here, at the first call, so that importing this module needs no Triton."""
    import triton

    from . import triton_kernels

    return SimpleNamespace(**{name: triton.jit(getattr(triton_kernels, name)) for name in
                              ("partial_logsumexp", "softmax_weights", "softplus_sigmoid")})
