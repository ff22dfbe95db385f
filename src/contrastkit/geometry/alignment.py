"""Alignment and uniformity (Wang & Isola, 2020) and the paper's eq. (5) approximation.

The central paper relates them to the similarity statistics of Def. 4.1: alignment with
``alpha = 2`` is ``2 - 2 E[s_pos]`` exactly (eq. 4), and uniformity is approximately
``2 (E[s_neg] + Var[s_neg] - 1)`` (eq. 5, exact when ``s_neg`` is Gaussian; Appendix C.1).
"""

from __future__ import annotations

import math

import torch

from contrastkit.checks.scalars import check_positive

from ._inputs import as_float64_features, as_float64_views, check_block_size
from ._pairs import similarity_tiles


def alignment(u: torch.Tensor, v: torch.Tensor, alpha: float = 2, normalize: bool = True) -> float:
    """Wang & Isola's alignment ``E_i ||u_i - v_i||^alpha`` over the positive pairs.

    Lower is better aligned. With ``alpha = 2`` and unit rows it equals
    ``2 - 2 * similarity_stats(u, v).positive_mean`` (the paper's eq. 4).

    Example:
        >>> import torch
        >>> u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> alignment(u, u), alignment(u, -u)
        (0.0, 4.0)
    """
    alpha = check_positive("alpha", alpha)
    u, v = as_float64_views(u, v, normalize=normalize)
    return float((u - v).norm(dim=1).pow(alpha).mean())


def uniformity(
    x: torch.Tensor,
    t: float = 2,
    y: torch.Tensor | None = None,
    *,
    normalize: bool = True,
    block_size: int = 512,
) -> float:
    """Wang & Isola's uniformity ``log E exp(-t ||x_i - x_j||^2)``, exact, block-wise.

    Without ``y``: over the unordered pairs ``i < j`` of the rows of ``x`` (Wang & Isola's
    ``pdist`` form; their training loss averages it over the two views). With ``y``: over the
    cross-view negative pairs ``(x_i, y_j)``, ``i != j`` -- the left side of the paper's eq. (5),
    which uses ``t = 1``. Lower is more uniform. Memory ``O(block_size^2)``.

    Example:
        >>> import torch
        >>> x = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])   # one pair at squared distance 4
        >>> round(uniformity(x, t=2), 6)
        -8.0
    """
    t = check_positive("t", t)
    block_size = check_block_size(block_size)
    if y is None:
        x = as_float64_features("x", x, normalize=normalize)
        other = x
    else:
        x, other = as_float64_views(x, y, normalize=normalize)
    squared_norms = x.square().sum(dim=1), other.square().sum(dim=1)
    pieces = []
    for rows, cols, tile in similarity_tiles(x, None if y is None else other, block_size):
        squared = (squared_norms[0][rows, None] + squared_norms[1][None, cols] - 2 * tile)
        exponents = -t * squared.clamp_min(0)
        if rows == cols:
            keep = _upper_triangle(exponents) if y is None else _off_diagonal(exponents)
            exponents = exponents[keep]
        pieces.append(torch.logsumexp(exponents.reshape(-1), dim=0))
    batch = x.shape[0]
    pairs = batch * (batch - 1) // 2 if y is None else batch * (batch - 1)
    return float(torch.logsumexp(torch.stack(pieces), dim=0)) - math.log(pairs)


def uniformity_approximation(negative_mean: float, negative_var: float, t: float = 1) -> float:
    """The paper's eq. (5): ``log E exp(-t ||u - v||^2) ~= 2t (E[s] - 1) + 2t^2 Var[s]``.

    Over negative pairs with cosine similarity ``s``; for the paper's ``t = 1`` this is
    ``2 (E[s] + Var[s] - 1)``. It is exact when ``s`` is Gaussian (Proposition C.1); pass
    ``stats.negative_mean, stats.negative_var`` from :func:`similarity_stats`. Note Wang &
    Isola's default is ``t = 2``.

    Example:
        >>> uniformity_approximation(0.0, 0.1)   # 2 * (0 + 0.1 - 1)
        -1.8
    """
    t = check_positive("t", t)
    for name, value in (("negative_mean", negative_mean), ("negative_var", negative_var)):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if negative_var < 0:
        raise ValueError(f"negative_var must be >= 0, got {negative_var}")
    return 2 * t * (negative_mean - 1) + 2 * t * t * negative_var


def _upper_triangle(tile: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(tile, dtype=torch.bool).triu(diagonal=1)


def _off_diagonal(tile: torch.Tensor) -> torch.Tensor:
    return ~torch.eye(tile.shape[0], tile.shape[1], dtype=torch.bool, device=tile.device)
