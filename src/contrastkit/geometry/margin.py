"""The fraction of pairs inside LMCL's margin band (Chen, Niu, Gong, Li, Yang, Sugiyama,
"Large-Margin Contrastive Learning with Distance Polarization Regularizer", ICML 2021): the
pairs that the l0 regularizer of their Eq. 6 counts, as a share of all pairs."""

from __future__ import annotations

import torch

from contrastkit.checks.scalars import check_margin_band

from ._inputs import as_float64_features, as_float64_views, check_block_size


def margin_fraction(u: torch.Tensor, delta_plus: float = 0.1, delta_minus: float = 0.5,
                    v: torch.Tensor | None = None, block_size: int = 512) -> float:
    """The share of pairs whose distance ``D = (1 - cos) / 2`` (Eq. 3) lies strictly inside
    ``(delta_plus, delta_minus)``: Eq. 6's ``R_0`` over the number of pairs.

    With ``v=None`` the pairs are ``(u_i, u_j)``, ``i < j`` (one set of embeddings); with two
    views the pairs are the negatives ``(u_i, v_j)``, ``i != j``. Rows are L2-normalized and
    compared in float64, ``block_size`` rows at a time.

    >>> import torch
    >>> margin_fraction(torch.tensor([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]]))
    0.3333333333333333
    """
    delta_plus, delta_minus = check_margin_band(delta_plus, delta_minus)
    block_size = check_block_size(block_size)
    if v is None:
        u = as_float64_features("u", u, normalize=True)
        other = u
    else:
        u, other = as_float64_views(u, v)
    inside = 0
    for start in range(0, u.shape[0], block_size):
        distances = (1.0 - u[start:start + block_size] @ other.T) / 2.0
        rows = torch.arange(start, start + distances.shape[0]).unsqueeze(1)
        columns = torch.arange(other.shape[0]).unsqueeze(0)
        counted = columns > rows if v is None else columns != rows
        inside += int(((distances > delta_plus) & (distances < delta_minus) & counted).sum())
    n = u.shape[0]
    return inside / (n * (n - 1) / (2 if v is None else 1))
