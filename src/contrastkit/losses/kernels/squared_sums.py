"""``off_diagonal_squared_sum``: ``sum_{a, k != a} (x_a . y_k + offset)^2`` in float64, the
negative-pair term of VRNS (Def. 5.7, with ``offset = 1/(n-1)``) and of the spectral loss
(``offset = 0``).

Two ways, whichever takes fewer multiply-adds (:func:`similarities_are_cheaper`): a small batch
forms its ``B x B`` similarities with the own pairs set to zero; a large one sums all pairs from
the two ``d x d`` Gram matrices, ``sum_ak (x_a . y_k)^2 = <X^T X, Y^T Y>`` (``O(B d^2)`` instead
of ``O(B^2 d)``), and subtracts the own pairs. Float64 accumulation keeps the subtraction exact
to far below float32 rounding.
"""

from __future__ import annotations

import torch


def similarities_are_cheaper(rows: int, columns: int, dim: int) -> bool:
    """Whether the ``rows x columns`` similarities take no more products than the two
    ``d x d`` Gram matrices (for ``B`` rows against ``B``: ``B <= 2 d``)."""
    return rows * columns <= dim * (rows + columns)


def off_diagonal_squared_sum(anchors: torch.Tensor, candidates: torch.Tensor,
                             own_candidates: torch.Tensor, offset: float,
                             first_column: int) -> torch.Tensor:
    """``sum_{a, k != a} (anchors_a . candidates_k + offset)^2``, in float64.

    Anchor ``a``'s own row among the candidates, left out, is ``own_candidates[a]``, at column
    ``first_column + a``.
    """
    x, y = anchors.double(), candidates.double()
    if similarities_are_cheaper(x.shape[0], y.shape[0], x.shape[1]):
        similarities = x @ y.T + offset
        own = similarities.new_zeros(x.shape[0])
        return similarities.diagonal_scatter(own, first_column).square().sum()
    same_pairs = ((x * own_candidates.double()).sum(dim=1) + offset).square().sum()
    return _all_pairs_by_gram(x, y, offset) - same_pairs


def _all_pairs_by_gram(x: torch.Tensor, y: torch.Tensor, offset: float) -> torch.Tensor:
    """``sum_{a, k} (x_a . y_k + offset)^2`` from the ``d x d`` Gram matrices, ``O(B d^2)``."""
    return ((x.T @ x * (y.T @ y)).sum() + 2 * offset * x.sum(0).dot(y.sum(0))
            + x.shape[0] * y.shape[0] * offset**2)
