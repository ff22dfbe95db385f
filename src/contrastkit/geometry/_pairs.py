"""Block-wise iteration over all pairs of embeddings, in O(B * block) memory.

The pair-level diagnostics (the exact ``method="pairs"`` similarity statistics, histograms,
uniformity) never hold a ``B x B`` matrix: they walk over ``block x block`` tiles of it.

:func:`reduce_pairs` applies one additive reduction (a :class:`PairSums`, a histogram count
vector, ...) to every tile and returns it per kind of pair, using the same bookkeeping as the
closed-form moments: sums over *all* ordered pairs of a kind (diagonal included) minus the
diagonal. Kinds (all counts are of ordered pairs ``(i, j)``):

- ``positive``: ``u_i . v_i``;
- ``negative``: cross-view ``u_i . v_j``, ``i != j`` (the negative pairs of Def. 4.1);
- ``within``: ``u_i . u_j`` and ``v_i . v_j``, ``i != j``;
- with labels, ``negative_same_class`` / ``negative_different_class`` and ``within_same_class`` /
  ``within_different_class`` split those by whether ``labels[i] == labels[j]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class PairSums:
    """Count, sum and sum of squares of a multiset of similarities (float64 accumulation).

    Additive: ``a + b``, ``a - b`` and ``k * a`` combine disjoint (or nested) multisets, which is
    how the statistics of each kind of pair are assembled from tiles or closed forms.
    """

    count: int
    total: float | torch.Tensor  # a 0-d tensor on the device until on_host
    total_sq: float | torch.Tensor

    @classmethod
    def of(cls, values: torch.Tensor, host: bool = True) -> PairSums:
        """The sums of ``values``; ``host=False`` keeps them as 0-d tensors on the values'
        device (see :func:`on_host`), so that a GPU is not waited for."""
        flat = values.to(torch.float64).reshape(-1)
        total, total_sq = flat.sum(), torch.dot(flat, flat)
        if host:
            return cls(flat.numel(), float(total), float(total_sq))
        return cls(flat.numel(), total, total_sq)

    def __add__(self, other: PairSums) -> PairSums:
        return PairSums(
            self.count + other.count, self.total + other.total, self.total_sq + other.total_sq
        )

    def __sub__(self, other: PairSums) -> PairSums:
        return PairSums(
            self.count - other.count, self.total - other.total, self.total_sq - other.total_sq
        )

    def __mul__(self, factor: int) -> PairSums:
        return PairSums(self.count * factor, self.total * factor, self.total_sq * factor)

    __rmul__ = __mul__

    def mean(self) -> float | None:
        """Mean of the values, or None for an empty set."""
        return float(self.total) / self.count if self.count > 0 else None

    def var(self) -> float | None:
        """Population variance (``E[s^2] - E[s]^2``, clamped at 0), or None for an empty set."""
        if self.count == 0:
            return None
        mean = float(self.total) / self.count
        return max(float(self.total_sq) / self.count - mean * mean, 0.0)


def on_host(sums: dict[str, PairSums]) -> dict[str, PairSums]:
    """``sums`` with every sum a Python float: the 0-d tensors among them (of ``PairSums.of(...,
    host=False)`` and their arithmetic) copied to the host together, in one transfer (one
    synchronization with a GPU, not two per entry)."""
    tensors = device_sums(sums)
    if not tensors:
        return dict(sums)
    return with_host_values(sums, torch.stack(tensors).tolist())


def device_sums(sums: dict[str, PairSums]) -> list[torch.Tensor]:
    """The 0-d tensors among ``sums``' totals, in float64, in the order
    :func:`with_host_values` reads their values back (a caller that reads them together with
    other numbers of its own, in one transfer)."""
    return [value.to(torch.float64) for entry in sums.values()
            for value in (entry.total, entry.total_sq) if isinstance(value, torch.Tensor)]


def with_host_values(sums: dict[str, PairSums], values) -> dict[str, PairSums]:
    """``sums`` with its tensors replaced by ``values``, the host copies of
    :func:`device_sums` in its order, and every other sum a float."""
    copied = iter(values)

    def host(value):
        return next(copied) if isinstance(value, torch.Tensor) else float(value)

    return {name: PairSums(entry.count, host(entry.total), host(entry.total_sq))
            for name, entry in sums.items()}


def similarity_tiles(
    a: torch.Tensor, b: torch.Tensor | None, block_size: int
) -> Iterator[tuple[slice, slice, torch.Tensor]]:
    """Yield ``(rows, cols, a[rows] @ b[cols].T)`` tiles covering all pairs.

    With ``b=None`` the pairs are those of ``a`` with itself and, by symmetry, only tiles with
    ``cols.start >= rows.start`` are produced (the caller counts the others twice).
    """
    symmetric = b is None
    other = a if b is None else b
    for row_start in range(0, a.shape[0], block_size):
        rows = slice(row_start, min(row_start + block_size, a.shape[0]))
        first_col = row_start if symmetric else 0
        for col_start in range(first_col, other.shape[0], block_size):
            cols = slice(col_start, min(col_start + block_size, other.shape[0]))
            yield rows, cols, a[rows] @ other[cols].T


def reduce_pairs(
    u: torch.Tensor,
    v: torch.Tensor | None,
    labels: torch.Tensor | None,
    block_size: int,
    reduce: Callable[[torch.Tensor], Any],
) -> dict[str, Any]:
    """Apply ``reduce`` to the similarities of every kind of pair, tile by tile.

    ``reduce(values)`` must return an object supporting ``+``, ``-`` and ``* int`` (e.g.
    :meth:`PairSums.of`, or a histogram count tensor). ``v=None`` treats ``u`` as one set of
    features: only the ``within*`` kinds are returned.
    """
    totals: dict[str, Any] = {}
    if v is not None:
        _add_cross(totals, u, v, labels, block_size, reduce)
        for view in (u, v):
            _add_within(totals, view, labels, block_size, reduce)
    else:
        _add_within(totals, u, labels, block_size, reduce)
    return derive_kinds(totals)


def derive_kinds(totals: dict[str, Any]) -> dict[str, Any]:
    """Turn sums over all ordered pairs (diagonal included) into the kinds of pairs.

    ``totals`` holds ``cross_all``, ``cross_diagonal``, ``within_all``, ``within_diagonal`` and,
    with labels, ``cross_same_all`` and ``within_same_all`` (any of the cross / within families
    may be absent).
    """
    kinds: dict[str, Any] = {}
    if "cross_all" in totals:
        kinds["positive"] = totals["cross_diagonal"]
        kinds["negative"] = totals["cross_all"] - totals["cross_diagonal"]
        if "cross_same_all" in totals:
            kinds["negative_same_class"] = totals["cross_same_all"] - totals["cross_diagonal"]
            kinds["negative_different_class"] = kinds["negative"] - kinds["negative_same_class"]
    if "within_all" in totals:
        kinds["within"] = totals["within_all"] - totals["within_diagonal"]
        if "within_same_all" in totals:
            kinds["within_same_class"] = totals["within_same_all"] - totals["within_diagonal"]
            kinds["within_different_class"] = kinds["within"] - kinds["within_same_class"]
    return kinds


def _accumulate(totals: dict[str, Any], key: str, value: Any) -> None:
    totals[key] = value if key not in totals else totals[key] + value


def _add_cross(totals, u, v, labels, block_size, reduce) -> None:
    for rows, cols, tile in similarity_tiles(u, v, block_size):
        _accumulate(totals, "cross_all", reduce(tile))
        if rows == cols:
            _accumulate(totals, "cross_diagonal", reduce(tile.diagonal()))
        if labels is not None:
            same = labels[rows, None] == labels[None, cols]
            _accumulate(totals, "cross_same_all", reduce(tile[same]))


def _add_within(totals, x, labels, block_size, reduce) -> None:
    for rows, cols, tile in similarity_tiles(x, None, block_size):
        # an off-diagonal tile stands for itself and its transpose: both orders of each pair
        weight = 1 if rows == cols else 2
        _accumulate(totals, "within_all", reduce(tile) * weight)
        if rows == cols:
            _accumulate(totals, "within_diagonal", reduce(tile.diagonal()))
        if labels is not None:
            same = labels[rows, None] == labels[None, cols]
            _accumulate(totals, "within_same_all", reduce(tile[same]) * weight)
