"""Closed-form sums over all pairs, from row sums and Gram matrices, accumulated in a stream.

For sets of embeddings ``A`` and ``B``, the sum of ``a_i . b_j`` over all ``(i, j)`` is
``(sum_i a_i) . (sum_j b_j)`` and the sum of ``(a_i . b_j)^2`` is ``<A^T A, B^T B>_F``: both
come from per-set moments (count, row sum, ``d x d`` Gram matrix) that add up over batches.
Restricting to same-class pairs is the same per class. :class:`StreamingMoments` keeps those
moments and yields the sums of :func:`contrastkit.geometry._pairs.derive_kinds`, in
``O(d^2)`` memory (``O(C d^2)`` with ``C`` classes) and ``O(B d^2)`` time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._pairs import PairSums, derive_kinds, on_host


@dataclass(frozen=True)
class Moments:
    """Row count, row sum and Gram matrix ``X^T X`` of a set of embeddings ``X``."""

    count: int
    total: torch.Tensor
    gram: torch.Tensor

    @classmethod
    def of(cls, x: torch.Tensor) -> Moments:
        return cls(x.shape[0], x.sum(dim=0), x.T @ x)

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.count + other.count, self.total + other.total, self.gram + other.gram)

    def pair_sums(self, other: Moments, host: bool = True) -> PairSums:
        """Sums of ``a_i . b_j`` and ``(a_i . b_j)^2`` over all ``(i, j)``, never forming them
        (``host=False``: as 0-d tensors, see :func:`._pairs.on_host`)."""
        total, total_sq = self.total @ other.total, (self.gram * other.gram).sum()
        if host:
            return PairSums(self.count * other.count, float(total), float(total_sq))
        return PairSums(self.count * other.count, total, total_sq)


class StreamingMoments:
    """Moments of one or two views (and of each class), added batch by batch."""

    def __init__(self, num_views: int, labelled: bool) -> None:
        self.num_views, self.labelled = num_views, labelled
        self.rows = 0
        self.dim: int | None = None
        self.overall: list[Moments | None] = [None] * num_views
        self.per_class: list[dict[int, Moments]] = [{} for _ in range(num_views)]
        self.positive = PairSums(0, 0.0, 0.0)  # u_i . v_i
        self.self_products = PairSums(0, 0.0, 0.0)  # u_i . u_i and v_i . v_i

    def update(self, views: tuple[torch.Tensor, ...], labels: torch.Tensor | None) -> None:
        """Add a batch: ``views`` are float64 ``(B, d)`` tensors with normalized rows."""
        if (labels is not None) != self.labelled:
            raise ValueError(
                "labels must be given with every batch or with none; this accumulator was "
                f"started {'with' if self.labelled else 'without'} labels"
            )
        dim = views[0].shape[1]
        if self.dim is not None and dim != self.dim:
            raise ValueError(f"every batch must have dim {self.dim}, got {dim}")
        self.dim = dim
        self.rows += views[0].shape[0]
        groups = _class_groups(labels) if labels is not None else None
        for index, view in enumerate(views):
            if groups is None:
                batch = Moments.of(view)
            else:
                classes = {label: Moments.of(view[rows]) for label, rows in groups.items()}
                _add_classes(self.per_class[index], classes)
                batch = _sum(classes.values())
            known = self.overall[index]
            self.overall[index] = batch if known is None else known + batch
            squared_norms = torch.linalg.vector_norm(view, dim=1).square()
            self.self_products = self.self_products + PairSums.of(squared_norms, host=False)
        if self.num_views == 2:
            self.positive = self.positive + PairSums.of(torch.einsum("ij,ij->i", *views),
                                                        host=False)

    def add(self, other: StreamingMoments) -> None:
        """Add the rows that ``other`` (moments of as many views) has seen, as if its batches
        had been given to :meth:`update` here; its per-class moments are added where this
        accumulator keeps classes (and are then needed)."""
        if other.num_views != self.num_views:
            raise ValueError(f"cannot add moments of {other.num_views} views to moments of "
                             f"{self.num_views}")
        if self.labelled and not other.labelled:
            raise ValueError("labels must be given with every batch or with none; this "
                             "accumulator was started with labels")
        if not other.rows:
            return
        if self.dim is not None and other.dim != self.dim:
            raise ValueError(f"every batch must have dim {self.dim}, got {other.dim}")
        self.dim = other.dim
        self.rows += other.rows
        for index, moments in enumerate(other.views()):
            known = self.overall[index]
            self.overall[index] = moments if known is None else known + moments
            if self.labelled:
                _add_classes(self.per_class[index], other.per_class[index])
        self.positive = self.positive + other.positive
        self.self_products = self.self_products + other.self_products

    def views(self) -> list[Moments]:
        """Each view's moments over all the rows added (the first batch sets them)."""
        views = [moments for moments in self.overall if moments is not None]
        if len(views) != self.num_views:
            raise ValueError("no batch was added: the moments of no row")
        return views

    def kinds(self, host: bool = True) -> dict[str, PairSums]:
        """The sums of every kind of pair among all rows added (see ``derive_kinds``), as
        floats, copied from the embeddings' device in one transfer (``host=False``: the sums
        as they are, some 0-d tensors on that device; see :func:`._pairs.on_host`)."""
        totals: dict[str, PairSums] = {}
        if self.num_views == 2:
            first, second = self.views()
            totals["cross_all"] = first.pair_sums(second, host=False)
            totals["cross_diagonal"] = self.positive
            if self.labelled:
                totals["cross_same_all"] = _same_class_sums(*self.per_class)
        totals["within_all"] = _sum(m.pair_sums(m, host=False) for m in self.views())
        totals["within_diagonal"] = self.self_products
        if self.labelled:
            totals["within_same_all"] = _sum(_same_class_sums(c, c) for c in self.per_class)
        kinds = derive_kinds(totals)
        return on_host(kinds) if host else kinds


def _add_classes(total: dict[int, Moments], added: dict[int, Moments]) -> None:
    """Add each class's moments of ``added`` to ``total``, in place."""
    for label, moments in added.items():
        known = total.get(label)
        total[label] = moments if known is None else known + moments


def _same_class_sums(classes_a: dict[int, Moments], classes_b: dict[int, Moments]) -> PairSums:
    return _sum(classes_a[label].pair_sums(classes_b[label], host=False)
                for label in classes_a)


def _sum(items):
    iterator = iter(items)
    total = next(iterator)
    for item in iterator:
        total = total + item
    return total


def _class_groups(labels: torch.Tensor) -> dict[int, torch.Tensor]:
    """Row indices of each class, keyed by label."""
    order = torch.argsort(labels, stable=True)
    values, counts = torch.unique_consecutive(labels[order], return_counts=True)
    return dict(zip(values.tolist(), torch.split(order, counts.tolist()), strict=True))
