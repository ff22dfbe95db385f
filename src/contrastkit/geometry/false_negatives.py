"""False negatives, measured: the in-batch negatives that score like their anchor's positive.

For a batch of ``B`` pairs, row ``i`` of ``u`` is an anchor and row ``i`` of ``v`` its positive
(the other view of a two-view task; the paired text of ``task=text_pairs``); the anchor's
negatives are the other rows of ``v``, the cross-view negative pairs ``(i, j)``, ``i != j``, of
the central paper's Def. 4.1 (Lee et al., ICML 2025, arXiv:2506.09781), ``B (B - 1)`` in all.
With ``s`` the cosine similarity (rows L2-normalized, float64):

- ``negatives_above_positive``: the pairs with ``s(u_i, v_j) >= s(u_i, v_i)``. A tie counts
  as above, against the model, as the retrieval metrics count ties: a negative that scores
  exactly like the positive (a duplicate's embedding, a collapsed encoder) is not told apart
  from it;
- ``negatives_above_band``: the pairs with ``s(u_i, v_j) > high``, strictly, ``high`` the upper
  edge of the theory's band of negative similarities for the run's dataset size ``n`` and batch
  size ``m`` (:func:`~contrastkit.theory.negative_similarity_band`: Theorem 5.5's mean
  ``-1/(n-1)`` plus the square root of its largest variance, eq. 11);
- each with ``_share``: the count over the ``negative_pairs``;
- with ``labels`` (class ids), ``negative_pairs_same_class`` and the same-class pairs among
  the two counts, ``negatives_above_positive_same_class`` and ``negatives_above_band_same_class``;
  with ``duplicates`` (ids: rows with one id are duplicates, e.g. the same positive text), the
  same with ``_duplicate``.

The anchors are one view's rows: for a symmetric loss on exchangeable views (two augmentations)
the other direction has the same distribution; explicit negatives beside the batch are not
counted. :func:`count_false_negatives` computes the counts on the embeddings' device without
reading them (what :class:`~contrastkit.monitor.SimilarityMonitor` does at each step, its
:class:`FalseNegativeTally` pooling them over a window); :func:`false_negative_stats` is the
whole computation on one batch (what ``contrastkit geometry`` reports). Both walk over row
blocks of the similarity matrix: ``O(block B)`` memory, ``O(B^2 d)`` time.
"""

from __future__ import annotations

import torch

from contrastkit.checks.scalars import check_count
from contrastkit.checks.tensors import check_labels
from contrastkit.theory import NegativeBand, negative_similarity_band

from ._inputs import as_float64_views, check_block_size

#: The two tests of a negative pair, and the groups its counts are also given for.
TESTS = ("above_positive", "above_band")
GROUPS = ("same_class", "duplicate")


def count_false_negatives(u: torch.Tensor, v: torch.Tensor, band_high: float | None = None,
                          labels: torch.Tensor | None = None,
                          duplicates: torch.Tensor | None = None,
                          block_size: int = 1024) -> dict[str, torch.Tensor]:
    """The counts of the module's docstring (except ``negative_pairs``, ``B (B - 1)``) of unit
    rows ``u``, ``v`` (float64 ``(B, d)``, checked by the caller), as 0-d float64 tensors on
    their device, nothing read to the host: ``negatives_above_band*`` only with ``band_high``,
    the groups only with their ids (``(B,)`` int64 on the same device)."""
    groups = {name: ids for name, ids in zip(GROUPS, (labels, duplicates), strict=True)
              if ids is not None}
    counts: dict[str, torch.Tensor] = {}
    for start in range(0, u.shape[0], block_size):
        rows = torch.arange(start, min(start + block_size, u.shape[0]), device=u.device)
        similarities = u[rows] @ v.T  # the anchors of the block against every candidate
        negative = rows[:, None] != torch.arange(v.shape[0], device=u.device)[None, :]
        positive = similarities.gather(1, rows[:, None])  # from the same products: exact ties
        tests = {"above_positive": negative & (similarities >= positive)}
        if band_high is not None:
            tests["above_band"] = negative & (similarities > band_high)
        masks = {f"negatives_{test}": mask for test, mask in tests.items()}
        for group, ids in groups.items():
            same = ids[rows][:, None] == ids[None, :]
            masks[f"negative_pairs_{group}"] = negative & same
            masks.update({f"negatives_{test}_{group}": mask & same
                          for test, mask in tests.items()})
        for key, mask in masks.items():
            count = mask.sum(dtype=torch.float64)
            counts[key] = count if key not in counts else counts[key] + count
    return counts


def band_high(n: int | None, batch_size: int) -> float | None:
    """The upper edge of the theory's band for dataset size ``n`` and a batch of
    ``batch_size`` rows, or ``None`` (no ``n``, or a batch larger than it: no band)."""
    if n is None or batch_size > n:
        return None
    return negative_similarity_band(n, batch_size).high


def with_shares(counts: dict[str, float]) -> dict[str, float]:
    """``counts`` (host numbers, with ``negative_pairs`` and, when the band's pairs are fewer,
    ``negative_pairs_banded``) with each test's ``_share``: its count over the negative pairs
    it was made on."""
    result = {key: value for key, value in counts.items() if key != "negative_pairs_banded"}
    pairs = {"above_positive": counts["negative_pairs"],
             "above_band": counts.get("negative_pairs_banded", counts["negative_pairs"])}
    for test in TESTS:
        if f"negatives_{test}" in counts:
            result[f"negatives_{test}_share"] = counts[f"negatives_{test}"] / pairs[test]
    return result


class FalseNegativeTally:
    """The counts of :func:`count_false_negatives` summed over the batches of a window.

    :meth:`add` takes one batch's counts, read to the host, and its ``negative_pairs``; a
    batch without the band (a batch size the theory has no band for) leaves the band's count
    and its share to the batches that have it. :meth:`result` is the window's counts and
    shares (:func:`with_shares`); :attr:`last` the batch added last's.
    """

    def __init__(self) -> None:
        self.counts: dict[str, float] = {}
        self.last: dict[str, float] | None = None

    def add(self, counts: dict[str, float], negative_pairs: int) -> None:
        batch = {"negative_pairs": float(negative_pairs), **counts}
        if "negatives_above_band" in counts:
            batch["negative_pairs_banded"] = float(negative_pairs)
        for key, value in batch.items():
            self.counts[key] = self.counts.get(key, 0.0) + value
        self.last = with_shares(batch)

    def result(self) -> dict[str, float]:
        """The window's counts and shares (``{}`` before any batch)."""
        return with_shares(self.counts) if self.counts else {}


def false_negative_stats(u: torch.Tensor, v: torch.Tensor, *, dataset_size: int | None = None,
                         batch_size: int | None = None, labels: torch.Tensor | None = None,
                         duplicates: torch.Tensor | None = None, block_size: int = 1024
                         ) -> dict[str, float]:
    """The false-negative statistics of the module's docstring of one batch of pairs: row
    ``i`` of ``u`` an anchor, row ``i`` of ``v`` its positive (``(B, d)`` each, ``B >= 2``;
    rows are L2-normalized here), its negatives the other rows of ``v``.

    Args:
        u, v: the anchors and their positives.
        dataset_size, batch_size: ``n`` and ``m`` of the theory's band (both or neither,
            ``2 <= m <= n``); with them the result also holds ``negatives_above_band*`` and the
            band's edges ``theory_negative_band_low`` / ``_high``.
        labels: class ids ``(B,)``: the same-class counts.
        duplicates: duplicate ids ``(B,)`` (rows with one id are duplicates): their counts.
        block_size: anchors per block of the similarity matrix.

    Example:
        Rows 0 and 1 share their positive text, so each scores its duplicate's positive
        exactly like its own (a tie, counted as above):

        >>> import torch
        >>> anchors = torch.tensor([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
        >>> positives = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        >>> stats = false_negative_stats(anchors, positives, duplicates=torch.tensor([0, 0, 1]))
        >>> stats["negatives_above_positive"], stats["negatives_above_positive_duplicate"]
        (2.0, 2.0)
        >>> round(stats["negatives_above_positive_share"], 4)  # of 3 x 2 negative pairs
        0.3333
    """
    u, v = as_float64_views(u, v)
    rows = u.shape[0]
    block_size = check_block_size(block_size)
    labels, duplicates = (None if ids is None else check_labels(ids, rows, name, u.device)
                          for name, ids in (("labels", labels), ("duplicates", duplicates)))
    band = _band(dataset_size, batch_size)
    counts = count_false_negatives(u, v, None if band is None else band.high, labels,
                                   duplicates, block_size)
    values = torch.stack(list(counts.values())).tolist() if counts else []
    result = with_shares({"negative_pairs": float(rows * (rows - 1)),
                          **dict(zip(counts, values, strict=True))})
    if band is not None:
        result["theory_negative_band_low"], result["theory_negative_band_high"] = band
    return result


def _band(dataset_size: int | None, batch_size: int | None) -> NegativeBand | None:
    """The theory's band for ``dataset_size`` and ``batch_size`` (``None`` without them)."""
    if (dataset_size is None) != (batch_size is None):
        raise ValueError(f"dataset_size and batch_size must be given together (the band of "
                         f"Theorem 5.5 needs both), got dataset_size={dataset_size!r} and "
                         f"batch_size={batch_size!r}")
    if dataset_size is None or batch_size is None:
        return None
    check_count("dataset_size", dataset_size, 2)
    check_count("batch_size", batch_size, 2)
    if batch_size > dataset_size:
        raise ValueError(f"batch_size must be <= dataset_size = {dataset_size}, got "
                         f"{batch_size}")
    return negative_similarity_band(dataset_size, batch_size)
