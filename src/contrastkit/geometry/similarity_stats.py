"""Statistics of positive- and negative-pair cosine similarities (paper Def. 4.1).

Two exact methods, which agree to float64 rounding:

- ``"moments"`` never forms a similarity: the sum and the sum of squares of ``u_i . v_j`` over
  all ``(i, j)`` are ``(sum_i u_i) . (sum_j v_j)`` and ``<U^T U, V^T V>_F`` (``d x d`` Gram
  matrices), and the diagonal and the same-class pairs are handled the same way per class. Cost
  ``O(B d^2)`` time and ``O(d^2)`` memory.
- ``"pairs"`` walks over ``block x block`` tiles of the similarity matrices (``O(B^2 d)`` time,
  ``O(block^2)`` memory); it is the direct reference, and cheaper when ``d > B``.

The moments add up over batches, so :class:`SimilarityAccumulator` gives the exact statistics
of a stream of batches (all pairs, across batches too) in ``O(d^2)`` memory.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from contrastkit.checks.tensors import check_labels

from ._inputs import as_float64_features, as_float64_views, check_block_size
from ._moments import StreamingMoments
from ._pairs import PairSums, reduce_pairs

METHODS = ("auto", "moments", "pairs")


@dataclass(frozen=True)
class SimilarityStats:
    """Mean and (population) variance of the cosine similarities of each kind of pair.

    ``positive``: ``u_i . v_i``; ``negative``: cross-view ``u_i . v_j`` for ``i != j`` (the
    negative pairs of Def. 4.1); ``within``: within-view ``u_i . u_j`` and ``v_i . v_j`` for
    ``i != j``. Counts are numbers of ordered pairs. With labels, the negatives are also split
    into same-class and different-class pairs (the "semantically meaningful variance" of the
    paper's Appendix F); those fields are None without labels, and a mean/variance is None when
    its count is 0.
    """

    positive_mean: float
    positive_var: float
    positive_count: int
    negative_mean: float
    negative_var: float
    negative_count: int
    within_mean: float
    within_var: float
    within_count: int
    negative_same_class_mean: float | None = None
    negative_same_class_var: float | None = None
    negative_same_class_count: int | None = None
    negative_different_class_mean: float | None = None
    negative_different_class_var: float | None = None
    negative_different_class_count: int | None = None
    within_same_class_mean: float | None = None
    within_same_class_var: float | None = None
    within_same_class_count: int | None = None
    within_different_class_mean: float | None = None
    within_different_class_var: float | None = None
    within_different_class_count: int | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


@dataclass(frozen=True)
class ClassSimilarityStats:
    """Similarity statistics of one labelled set of features: all, same-class, different-class.

    Over ordered pairs ``(i, j)``, ``i != j``, of rows of ``z`` (normalized). Mean/variance are
    None when a count is 0 (e.g. no class has two samples).
    """

    all_mean: float
    all_var: float
    all_count: int
    same_class_mean: float | None
    same_class_var: float | None
    same_class_count: int
    different_class_mean: float | None
    different_class_var: float | None
    different_class_count: int

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def similarity_stats(
    u: torch.Tensor,
    v: torch.Tensor,
    labels: torch.Tensor | None = None,
    *,
    method: str = "auto",
    block_size: int = 512,
) -> SimilarityStats:
    """Exact similarity statistics over all pairs of the two views ``u, v`` (shape ``(B, d)``).

    Rows are L2-normalized; everything is computed and accumulated in float64, so a float32
    input gives the statistics of its float32 values to float64 rounding.

    Args:
        u, v: the two views; row ``i`` of each is the positive pair ``i``.
        labels: optional class ids ``(B,)``; splits the negative and within-view pairs into
            same-class and different-class ones.
        method: ``"moments"`` (closed form through ``d x d`` Gram matrices, ``O(B d^2)``),
            ``"pairs"`` (block-wise over all pairs, ``O(B^2 d)``, memory ``O(block^2)``) or
            ``"auto"`` (moments when ``d <= B``).
        block_size: tile size of the ``"pairs"`` method.

    Example:
        >>> import torch
        >>> from contrastkit import geometry, theory
        >>> etf = torch.from_numpy(theory.simplex_etf(5, 4))
        >>> stats = geometry.similarity_stats(etf, etf)
        >>> round(stats.negative_mean, 6), round(stats.negative_var, 6)  # -1/(n-1), 0
        (-0.25, 0.0)
    """
    u, v = as_float64_views(u, v)
    if labels is not None:
        labels = check_labels(labels, u.shape[0], device=u.device)
    return _stats_from(_pair_sums(u, v, labels, method, block_size))


def class_similarity_stats(
    z: torch.Tensor,
    labels: torch.Tensor,
    *,
    method: str = "auto",
    block_size: int = 512,
) -> ClassSimilarityStats:
    """Cosine-similarity statistics of the pairs of one labelled set of features ``z`` (N, d).

    The supervised counterpart of :func:`similarity_stats`: same-class pairs play the role of
    positives (as in the distance histograms of LMCL, Fig. 2(b)). Same methods and precision.

    Example:
        >>> import torch
        >>> z = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
        >>> s = class_similarity_stats(z, torch.tensor([0, 0, 1, 1]))
        >>> s.same_class_mean, s.different_class_mean
        (1.0, 0.0)
    """
    z = as_float64_features("z", z, normalize=True)
    labels = check_labels(labels, z.shape[0], device=z.device)
    kinds = _pair_sums(z, None, labels, method, block_size)
    within, same, different = (
        kinds["within"], kinds["within_same_class"], kinds["within_different_class"]
    )
    all_mean, all_var = within.mean(), within.var()
    assert all_mean is not None and all_var is not None  # z has 2 rows or more: pairs
    return ClassSimilarityStats(
        all_mean=all_mean,
        all_var=all_var,
        all_count=within.count,
        same_class_mean=same.mean(),
        same_class_var=same.var(),
        same_class_count=same.count,
        different_class_mean=different.mean(),
        different_class_var=different.var(),
        different_class_count=different.count,
    )


def _pair_sums(u: torch.Tensor, v: torch.Tensor | None, labels: torch.Tensor | None, method: str,
               block_size: int) -> dict[str, PairSums]:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    block_size = check_block_size(block_size)
    if method == "auto":
        method = "moments" if u.shape[1] <= u.shape[0] else "pairs"
    if method == "pairs":
        return reduce_pairs(u, v, labels, block_size, PairSums.of)
    moments = StreamingMoments(num_views=1 if v is None else 2, labelled=labels is not None)
    moments.update((u,) if v is None else (u, v), labels)
    return moments.kinds()


def _stats_from(kinds: dict[str, PairSums]) -> SimilarityStats:
    fields: dict[str, Any] = {}  # the keyword arguments of SimilarityStats
    for kind, sums in kinds.items():
        fields[f"{kind}_mean"] = sums.mean()
        fields[f"{kind}_var"] = sums.var()
        fields[f"{kind}_count"] = sums.count
    return SimilarityStats(**fields)


class SimilarityAccumulator:
    """Exact :func:`similarity_stats` over all pairs of a stream of batches, in O(d^2) memory.

    ``update(u, v, labels=None)`` adds a batch of positive pairs; ``compute()`` returns the
    statistics over *all* pairs of everything added so far -- including negative pairs across
    batches -- as if one call had seen the concatenation. Use it to measure a whole evaluation
    set that does not fit in memory. Labels must be given with every batch or with none.

    Example:
        >>> import torch
        >>> generator = torch.Generator().manual_seed(0)
        >>> u, v = torch.randn(2, 100, 8, generator=generator, dtype=torch.float64)
        >>> accumulator = SimilarityAccumulator()
        >>> for rows in torch.arange(100).split(30):
        ...     _ = accumulator.update(u[rows], v[rows])
        >>> streamed, direct = accumulator.compute(), similarity_stats(u, v)
        >>> abs(streamed.negative_var - direct.negative_var) < 1e-12
        True
    """

    def __init__(self) -> None:
        self._moments: StreamingMoments | None = None

    def update(
        self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None
    ) -> SimilarityAccumulator:
        u, v = as_float64_views(u, v, min_batch=1)
        if labels is not None:
            labels = check_labels(labels, u.shape[0], device=u.device)
        if self._moments is None:
            self._moments = StreamingMoments(num_views=2, labelled=labels is not None)
        self._moments.update((u, v), labels)
        return self

    def add_moments(self, moments: StreamingMoments) -> SimilarityAccumulator:
        """Add a batch already reduced to its moments (float64 views with unit rows, as
        :meth:`update` makes them): for a caller that needs the batch's own statistics too
        and so computes its Gram matrices once."""
        if self._moments is None:
            self._moments = StreamingMoments(num_views=2, labelled=False)
        self._moments.add(moments)
        return self

    def compute(self) -> SimilarityStats:
        if self._moments is None or self._moments.rows < 2:
            rows = 0 if self._moments is None else self._moments.rows
            raise ValueError(f"compute() needs at least 2 pairs added with update(), got {rows}")
        return _stats_from(self._moments.kinds())
