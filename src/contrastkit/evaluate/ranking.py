"""Exact retrieval metrics of any query embeddings against any corpus: recall@k, hit@k, MRR@k,
nDCG@k and MAP@R, with one or several relevant corpus items per query and optionally graded
relevance.

**One order, ties against the model.** Every metric reads the same ranking of the corpus for a
query: scores descending, and among equal scores the less relevant first (non-relevant items
before relevant ones, lower grades before higher). It is the worst case over the orders of
tied items, so a query's metrics do not depend on the order of the corpus, and a collapsed
encoder (every score equal) ranks every relevant item behind every other one. The
``m``-th relevant item in that order (from 0) sits at position ``1 + m +`` the number of
non-relevant items scored at least as high as it: with one relevant item, the rank of
:func:`~contrastkit.evaluate.retrieval.retrieval_ranks`, whose image-text recalls are ``hit@k``
here.

**Exact in chunks.** Queries are scored ``chunk`` at a time; of a chunk's ``(chunk, N)`` score
block only the top ``L = max(max(ks), R)`` scores of each query are kept (``torch.topk``, ``R``
the chunk's largest number of relevant items), and one count of the scores equal to the
``L``-th closes the gap ``torch.topk`` leaves at a tie on its boundary. A relevant item scored
above the ``L``-th score is placed exactly from the kept scores, one scored at it from that
count, one scored below it lies beyond position ``L``, where no metric here looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from contrastkit.checks.scalars import check_choice, check_count

from .relevance import relevance_rows
from .retrieval import check_ks, real_operands, unit_operands

SCORES = ("cosine", "dot")


@torch.no_grad()
def retrieval_metrics(queries: torch.Tensor, corpus: torch.Tensor, relevant: object, *,
                      grades: object = None,
                      ks: Sequence[int] = (1, 5, 10), score: str = "cosine",
                      chunk: int = 1024) -> dict[str, float]:
    """The retrieval metrics of ``queries`` ``(Q, d)`` against ``corpus`` ``(N, d)``, each the
    mean over queries, in ``[0, 1]`` (module docstring: every metric reads one ranking, ties
    counted against the model):

    - ``recall@k``: the share of a query's relevant items among its first ``k``;
    - ``hit@k``: whether at least one is (the recall@k of CLIP's image-text retrieval);
    - ``mrr@k``: ``1 / `` the position of the first relevant item, 0 beyond ``k``;
    - ``ndcg@k``: ``sum g_i / log2(1 + p_i)`` over the relevant items ``i`` at positions
      ``p_i <= k``, with gain ``g_i`` the item's grade (1 without ``grades``), divided by the
      same sum of the ideal order (grades descending from position 1);
    - ``map@r``: MAP@R (Musgrave, Belongie & Lim, ECCV 2020): with ``R`` the query's number of
      relevant items, ``(1 / R) sum_{i <= R} P(i) rel(i)``, the precision at each of the
      first ``R`` positions that holds a relevant item, averaged over ``R``.

    ``relevant`` names each query's relevant corpus rows: one index per query ``(Q,)``, a
    matrix ``(Q, R)``, a list of index lists, or
    :class:`~contrastkit.evaluate.relevance.Relevance` ``(offsets, indices)`` (compressed sparse
    rows); ``grades``, in the same form, grades them (finite, ``> 0``; only nDCG and the order
    of tied relevant items read them). ``score`` is ``"cosine"`` (rows L2-normalized; a zero
    row scores 0) or ``"dot"``. Every ``k`` lies in ``[1, N]``.

    Memory: one ``(chunk, N)`` block of scores at a time in the embeddings' dtype (float32 at
    least), on their device, with ``torch.topk``'s ``(chunk, L)`` and one boolean
    ``(chunk, N)`` mask beside it, and ``O(Q + nnz)`` for the relevance on the CPU; never a
    ``(Q, N)`` matrix. Lower ``chunk`` for a large corpus: 1024 queries against a million
    float32 rows is 4 GB of scores.
    """
    check_choice("score", score, SCORES)
    operands = unit_operands if score == "cosine" else real_operands
    queries, corpus = operands(queries, "queries", corpus, "corpus")
    ks = check_ks(ks, corpus.shape[0], "the number of corpus items")
    check_count("chunk", chunk, 1)
    offsets, indices, grades = relevance_rows(relevant, grades, queries.shape[0],
                                              corpus.shape[0])
    per_query: dict[str, list[torch.Tensor]] = {}
    for start in range(0, queries.shape[0], chunk):
        stop = min(start + chunk, queries.shape[0])
        scores = queries[start:stop] @ corpus.T
        if not torch.isfinite(scores).all():
            raise ValueError("queries and corpus give dot-product scores beyond the range of "
                             f"{scores.dtype} (overflow): scale them down or use "
                             "score='cosine'")
        window = slice(int(offsets[start]), int(offsets[stop]))
        position, gain, count = relevant_positions(
            scores, offsets[start:stop + 1] - offsets[start], indices[window], grades[window],
            max(ks))
        for name, values in _metrics(position, gain, count, ks).items():
            per_query.setdefault(name, []).append(values)
    # correctly rounded sums: the same whatever the chunks
    return {name: math.fsum(torch.cat(values).tolist()) / queries.shape[0]
            for name, values in per_query.items()}


def relevant_positions(scores: torch.Tensor, offsets: torch.Tensor, indices: torch.Tensor,
                       grades: torch.Tensor, depth: int
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The positions of each query's relevant items in its ranking (module docstring), for a
    block of queries' ``scores`` ``(c, N)`` and their relevance in compressed sparse rows
    (``offsets`` ``(c + 1,)`` from 0, ``indices``, float64 ``grades``, on the CPU).

    Returns, on the CPU, ``(position (c, W), gain (c, W), count (c,))`` with ``W`` the block's
    largest number of relevant items: row ``q`` lists query ``q``'s ``count[q]`` relevant items
    in ranking order, ``position`` their 1-based positions (int64) and ``gain`` their grades
    (float64); exact up to ``max(depth, W)``, ``N + 1`` for an item beyond that, and for the
    padding after ``count[q]`` (gain 0).
    """
    rows, n = scores.shape
    count = offsets[1:] - offsets[:-1]
    width = int(count.max())
    column = torch.arange(width)
    padding = column[None, :] >= count[:, None]
    where = torch.where(padding, offsets[:-1, None], offsets[:-1, None] + column)
    gain = grades[where].masked_fill(padding, 0.0)
    item = indices[where].to(scores.device)
    score = scores.gather(1, item).cpu().masked_fill(padding, -torch.inf)
    # the ranking order of the relevant items: score descending, then grade ascending
    order = gain.argsort(dim=1, stable=True)
    score, gain = score.gather(1, order), gain.gather(1, order)
    order = score.argsort(dim=1, descending=True, stable=True)
    score, gain = score.gather(1, order), gain.gather(1, order)

    top = scores.topk(min(n, max(depth, width)), dim=1).values
    threshold = top[:, -1:]
    at_threshold = (scores >= threshold).sum(dim=1, keepdim=True).cpu()
    top, threshold = top.cpu(), threshold.cpu()
    # items scored >= s: above the threshold, all among the top; at it, the full count
    at_least = torch.where(score == threshold, at_threshold,
                           top.shape[1] - _count_below(top, score))
    relevant_at_least = width - _count_below(score, score)
    position = 1 + column + at_least - relevant_at_least
    return position.masked_fill(padding | (score < threshold), n + 1), gain, count


def _count_below(descending: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Per row, how many entries of ``descending`` (sorted descending) are ``< values``."""
    return torch.searchsorted(descending.flip(1).contiguous(), values, side="left")


def _metrics(position: torch.Tensor, gain: torch.Tensor, count: torch.Tensor,
             ks: Sequence[int]) -> dict[str, torch.Tensor]:
    """Each query's metrics (float64 ``(c,)`` each) from :func:`relevant_positions`."""
    first = position[:, 0].double()
    relevant = count.double()
    discount = 1.0 / torch.log2(position.double() + 1)
    ideal = gain.sort(dim=1, descending=True).values
    ideal = ideal / torch.log2(torch.arange(ideal.shape[1], dtype=torch.float64) + 2)
    result = {}
    for k in ks:
        within = position <= k
        result[f"recall@{k}"] = within.sum(dim=1) / relevant
    for k in ks:
        result[f"hit@{k}"] = (first <= k).double()
    for k in ks:
        result[f"mrr@{k}"] = torch.where(first <= k, 1.0 / first, 0.0)
    for k in ks:
        dcg = (gain * discount * (position <= k)).sum(dim=1)
        result[f"ndcg@{k}"] = dcg / ideal[:, :k].sum(dim=1)
    rank = torch.arange(1, position.shape[1] + 1, dtype=torch.float64)
    precision = (rank / position) * (position <= count[:, None])
    result["map@r"] = precision.sum(dim=1) / relevant
    return result
