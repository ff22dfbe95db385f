"""The two views a loss receives: validated, brought to one dtype, rows normalized."""

from __future__ import annotations

import torch

from contrastkit.checks.tensors import check_views
from contrastkit.rows import unit_rows


def prepare_views(
    u: torch.Tensor, v: torch.Tensor, normalize: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate two views, bring them to one dtype (the wider of the two, as torch promotes)
    and L2-normalize their rows when ``normalize`` is true."""
    check_views(u, v)
    dtype = torch.promote_types(u.dtype, v.dtype)
    u, v = u.to(dtype), v.to(dtype)
    if normalize:
        u, v = unit_rows(u), unit_rows(v)
    return u, v
