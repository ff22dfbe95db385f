"""Input validation shared by the geometry diagnostics.

Every check raises ``ValueError`` naming the argument and what was expected. The two-view checks
are the losses' (:mod:`contrastkit.losses._checks`); this module adds single sets of features,
class labels and block sizes.
"""

from __future__ import annotations

from numbers import Integral

import torch

from contrastkit.losses._checks import check_finite_tensor, check_float_matrix, check_views
from contrastkit.losses.feature_normalization import unit_rows


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
    when ``normalize`` (by the losses' :func:`~contrastkit.losses.feature_normalization.unit_rows`:
    a zero row stays zero)."""
    x = x.detach().to(torch.float64, copy=True)
    return unit_rows(x) if normalize else x


def check_block_size(block_size: int) -> int:
    """Return ``block_size`` as an int if it is an integer >= 1."""
    if isinstance(block_size, bool) or not isinstance(block_size, Integral) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    return int(block_size)
