"""The inputs of the geometry diagnostics: validated (with :mod:`contrastkit.checks`) and
turned into detached float64 copies, rows normalized where asked."""

from __future__ import annotations

import torch

from contrastkit.checks.scalars import check_count
from contrastkit.checks.tensors import check_finite_tensor, check_float_matrix, check_views
from contrastkit.rows import unit_rows


def as_float64_views(
    u: torch.Tensor, v: torch.Tensor, normalize: bool = True, min_batch: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate two views ``(B, d)`` and return them detached, in float64, rows normalized."""
    check_views(u, v, min_batch=min_batch)
    return _float64_copy(u, normalize), _float64_copy(v, normalize)


def as_float64_features(
    name: str, z: torch.Tensor, normalize: bool = False, min_rows: int = 2
) -> torch.Tensor:
    """Validate one set of features ``(N, d)`` and return it detached, in float64."""
    check_float_matrix(name, z, shape="(samples, dim)")
    if z.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {z.shape[0]}")
    if z.shape[1] < 1:
        raise ValueError(f"{name} needs at least one feature column, got dim {z.shape[1]}")
    check_finite_tensor(name, z)
    return _float64_copy(z, normalize)


def _float64_copy(x: torch.Tensor, normalize: bool) -> torch.Tensor:
    """A detached float64 copy of ``x`` (the input is never modified), rows scaled to unit norm
    when ``normalize`` (by the losses' :func:`~contrastkit.rows.unit_rows`:
    a zero row stays zero)."""
    x = x.detach().to(torch.float64, copy=True)
    return unit_rows(x) if normalize else x


def check_block_size(block_size: int) -> int:
    """Return ``block_size`` as an int if it is an integer >= 1."""
    return check_count("block_size", block_size, 1)
