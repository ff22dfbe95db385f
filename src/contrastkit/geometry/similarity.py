"""Statistics of positive- and negative-pair cosine similarities (paper Def. 4.1).

Two exact methods, which agree to float64 rounding:

- ``"moments"`` never forms a similarity: the sum and the sum of squares of ``u_i . v_j`` over
  all ``(i, j)`` are ``(sum_i u_i) . (sum_j v_j)`` and ``<U^T U, V^T V>_F`` (``d x d`` Gram
  matrices), and the diagonal and the same-class pairs are handled the same way per class. Cost
  ``O(B d^2)`` time and ``O(d^2)`` memory.
- ``"pairs"`` walks over ``block x block`` tiles of the similarity matrices (``O(B^2 d)`` time,
  ``O(block^2)`` memory); it is the direct reference, and cheaper when ``d > B``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ._checks import as_float64_features, as_float64_views, check_block_size, check_labels
from ._pairs import PairSums, accumulate, derive_kinds, reduce_pairs

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
    block_size: int = 1024,
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
        labels = check_labels(labels, u.shape[0], u.device)
    kinds = _pair_sums(u, v, labels, method, block_size)
    fields = {}
    for kind, sums in kinds.items():
        fields[f"{kind}_mean"] = sums.mean()
        fields[f"{kind}_var"] = sums.var()
        fields[f"{kind}_count"] = sums.count
    return SimilarityStats(**fields)


def class_similarity_stats(
    z: torch.Tensor,
    labels: torch.Tensor,
    *,
    method: str = "auto",
    block_size: int = 1024,
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
    labels = check_labels(labels, z.shape[0], z.device)
    kinds = _pair_sums(z, None, labels, method, block_size)
    within, same, different = (
        kinds["within"], kinds["within_same_class"], kinds["within_different_class"]
    )
    return ClassSimilarityStats(
        all_mean=within.mean(),
        all_var=within.var(),
        all_count=within.count,
        same_class_mean=same.mean(),
        same_class_var=same.var(),
        same_class_count=same.count,
        different_class_mean=different.mean(),
        different_class_var=different.var(),
        different_class_count=different.count,
    )


def _pair_sums(u, v, labels, method: str, block_size: int) -> dict[str, PairSums]:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    block_size = check_block_size(block_size)
    if method == "auto":
        method = "moments" if u.shape[1] <= u.shape[0] else "pairs"
    if method == "pairs":
        return reduce_pairs(u, v, labels, block_size, PairSums.of)
    return _moment_sums(u, v, labels)


def _moment_sums(u, v, labels) -> dict[str, PairSums]:
    """The sums of :func:`contrastkit.geometry._pairs.reduce_pairs`, from Gram matrices."""
    views = (u,) if v is None else (u, v)
    groups = _class_groups(labels) if labels is not None else None
    # per view: the moments of every class (or of all rows), each Gram product computed once
    per_class = [[_Moments.of(view[index]) for index in groups] if groups else None
                 for view in views]
    overall = [sum(classes[1:], classes[0]) if classes else _Moments.of(view)
               for view, classes in zip(views, per_class, strict=True)]
    totals: dict[str, PairSums] = {}
    if v is not None:
        totals["cross_all"] = overall[0].pair_sums(overall[1])
        totals["cross_diagonal"] = PairSums.of((u * v).sum(dim=1))
        if groups is not None:
            totals["cross_same_all"] = _same_class_sums(per_class[0], per_class[1])
    for view, moments, classes in zip(views, overall, per_class, strict=True):
        accumulate(totals, "within_all", moments.pair_sums(moments))
        accumulate(totals, "within_diagonal", PairSums.of(view.square().sum(dim=1)))
        if groups is not None:
            accumulate(totals, "within_same_all", _same_class_sums(classes, classes))
    return derive_kinds(totals)


@dataclass(frozen=True)
class _Moments:
    """Row count, row sum and Gram matrix ``X^T X`` of a set of embeddings ``X``."""

    count: int
    total: torch.Tensor
    gram: torch.Tensor

    @classmethod
    def of(cls, x: torch.Tensor) -> _Moments:
        return cls(x.shape[0], x.sum(dim=0), x.T @ x)

    def __add__(self, other: _Moments) -> _Moments:
        return _Moments(self.count + other.count, self.total + other.total, self.gram + other.gram)

    def pair_sums(self, other: _Moments) -> PairSums:
        """Sums of ``a_i . b_j`` and ``(a_i . b_j)^2`` over all ``(i, j)``, never forming them:
        ``(sum_i a_i) . (sum_j b_j)`` and ``<A^T A, B^T B>_F``."""
        return PairSums(
            self.count * other.count,
            float(self.total @ other.total),
            float((self.gram * other.gram).sum()),
        )


def _same_class_sums(classes_a: list[_Moments], classes_b: list[_Moments]) -> PairSums:
    sums = PairSums(0, 0.0, 0.0)
    for a, b in zip(classes_a, classes_b, strict=True):
        sums = sums + a.pair_sums(b)
    return sums


def _class_groups(labels: torch.Tensor) -> list[torch.Tensor]:
    """Row indices of each class, one tensor per distinct label."""
    order = torch.argsort(labels, stable=True)
    _, counts = torch.unique_consecutive(labels[order], return_counts=True)
    return list(torch.split(order, counts.tolist()))
