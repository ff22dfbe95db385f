"""Hard negatives mined from a corpus, exactly: for each query (an anchor), the ``k`` corpus
items it scores highest that are not its own and pass the filters, as sentence-transformers'
``mine_hard_negatives`` mines them with its exact search (its ``max_score``,
``absolute_margin`` and ``relative_margin`` are :func:`mine_hard_negatives`'s ``max_score``,
``margin`` and ``relative_margin``).

**Which candidates.** Corpus item ``c`` is a candidate of query ``q``, whose positive is ``p``,
when it is not among ``q``'s excluded items (its positive and any copy of it or of the query:
the caller names them by corpus index) and its score ``s(q, c)`` passes every filter given:

- ``s(q, c) <= max_score``;
- ``s(q, c) <= s(q, p) - margin`` (a margin below the positive's score);
- ``s(q, c) <= s(q, p) (1 - relative_margin)`` (a share below it).

The scores are cosine similarities (or dot products) computed in the embeddings' dtype, float32
at least, without TF32 on a GPU; the positive's score ``s(q, p)`` likewise, and the right-hand
sides above in float64, each comparison exact.

**Order and ties.** A query's candidates are ranked by score, highest first, and equal scores by
corpus index, the lower first; the first ``k`` are its negatives. Fewer than ``k`` may pass:
the rest of the row is padding (index -1, score -inf), and ``counts`` says how many are real.

**Exact in chunks.** Queries ``query_chunk`` at a time meet the corpus ``corpus_chunk`` items at
a time; of each ``(query_chunk, corpus_chunk)`` block of scores only each query's best ``k``
are kept (``torch.topk``; where the next score ties with the ``k``-th, the tied scores are
counted to settle it by the index rule) and merged into the running best ``k``. The filters
cost a pass over a block only in the rows whose best score fails them. No ``(Q, N)`` matrix
is ever held, and the result does not depend on the chunk sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from contrastkit.checks.scalars import (
    check_choice,
    check_count,
    check_nonnegative,
    check_probability_below_one,
    check_real,
)
from contrastkit.dtypes import cast, full_float32
from contrastkit.rows import unit_rows

from .ranking import SCORES
from .relevance import relevance_rows
from .retrieval import real_operands

PADDING = -1


class MinedNegatives(NamedTuple):
    """What :func:`mine_hard_negatives` returns, on the queries' device.

    Attributes:
        indices: int64 ``(Q, k)``, each query's negatives as corpus indices, best first
            (module docstring's order); -1 past ``counts``.
        scores: ``(Q, k)``, their scores in the scores' dtype; -inf past ``counts``.
        counts: int64 ``(Q,)``, how many negatives each query has (``<= k``).
        positive_scores: ``(Q,)``, each query's score of its positive, or ``None`` without
            ``positives``.
    """

    indices: torch.Tensor
    scores: torch.Tensor
    counts: torch.Tensor
    positive_scores: torch.Tensor | None


@torch.no_grad()
def mine_hard_negatives(queries: torch.Tensor, corpus: torch.Tensor, k: int, *,
                        positives: torch.Tensor | None = None, exclude: object = None,
                        max_score: float | None = None, margin: float | None = None,
                        relative_margin: float | None = None, score: str = "cosine",
                        query_chunk: int = 1024, corpus_chunk: int = 65536,
                        on_queries: Callable[[int], None] | None = None) -> MinedNegatives:
    """The ``k`` hardest negatives of each of ``queries`` ``(Q, d)`` in ``corpus`` ``(N, d)``
    (module docstring: which candidates, their order and ties, exact in chunks).

    ``positives`` ``(Q, d)``: each query's positive, needed by ``margin`` and
    ``relative_margin``. ``exclude``: each query's corpus indices that are never its negatives,
    in any form :func:`~contrastkit.evaluate.ranking.retrieval_metrics` takes ``relevant`` (one
    index per query, a matrix, a list of lists, :class:`~contrastkit.evaluate.relevance.
    Relevance`), a query may have none. ``score``: ``"cosine"`` (rows L2-normalized) or
    ``"dot"``. The computation runs on the queries' device, a block of the corpus moved there
    at a time: a corpus left on the CPU travels once per chunk of queries, so put it on the
    device when it fits. ``on_queries(n)`` is called as each chunk of ``n`` queries is done.
    """
    check_choice("score", score, SCORES)
    queries, corpus = real_operands(queries, "queries", corpus, "corpus")
    k = check_count("k", k, 1)
    query_chunk = check_count("query_chunk", query_chunk, 1)
    corpus_chunk = check_count("corpus_chunk", corpus_chunk, 1)
    if score == "cosine":
        queries, corpus = unit_rows(queries), unit_rows(corpus)
    positive_scores = None
    if positives is not None:
        positives, _ = real_operands(positives, "positives", queries, "queries")
        if positives.shape[0] != queries.shape[0]:
            raise ValueError(f"positives must have one row per query ({queries.shape[0]}), "
                             f"got {positives.shape[0]}")
        positives = cast(positives, queries.dtype).to(queries.device)
        if score == "cosine":
            positives = unit_rows(positives)
        positive_scores = (queries * positives).sum(dim=1)
    ceiling = _ceiling(queries, positive_scores, max_score, margin, relative_margin)
    offsets, indices, _ = relevance_rows(
        torch.zeros(queries.shape[0], 0, dtype=torch.long) if exclude is None else exclude,
        None, queries.shape[0], corpus.shape[0], name="exclude", allow_empty=True)
    results = []
    with full_float32():
        for start in range(0, queries.shape[0], query_chunk):
            stop = min(start + query_chunk, queries.shape[0])
            row = torch.repeat_interleave(torch.arange(stop - start),
                                          offsets[start + 1:stop + 1] - offsets[start:stop])
            excluded = (row.to(queries.device),
                        indices[int(offsets[start]):int(offsets[stop])].to(queries.device))
            results.append(_mine_chunk(queries[start:stop], corpus, k, corpus_chunk,
                                       None if ceiling is None else ceiling[start:stop],
                                       excluded, score))
            if on_queries is not None:
                on_queries(stop - start)
    best_scores = torch.cat([scores for scores, _ in results])
    best = torch.cat([found for _, found in results])
    return MinedNegatives(best, best_scores, (best != PADDING).sum(dim=1), positive_scores)


def _ceiling(queries: torch.Tensor, positive_scores: torch.Tensor | None,
             max_score: float | None, margin: float | None,
             relative_margin: float | None) -> torch.Tensor | None:
    """The highest score each query's candidates may have, ``(Q,)`` in the scores' dtype
    (rounded down from float64, so that ``score <= ceiling`` is exact), or ``None`` without
    filters."""
    limits = []
    if max_score is not None:
        limits.append(torch.full((queries.shape[0],), check_real("max_score", max_score),
                                 dtype=torch.float64, device=queries.device))
    for name, value in (("margin", margin), ("relative_margin", relative_margin)):
        if value is None:
            continue
        value = (check_nonnegative(name, value) if name == "margin" else
                 check_probability_below_one(name, value, "the share below the positive's "
                                                          "score"))
        if positive_scores is None:
            raise ValueError(f"{name} compares each candidate with its query's positive: "
                             f"pass positives")
        positive = positive_scores.double()
        limits.append(positive - value if name == "margin" else positive * (1 - value))
    if not limits:
        return None
    exact = torch.stack(limits).amin(dim=0)
    rounded = exact.to(queries.dtype)
    return torch.where(rounded.double() > exact,
                       torch.nextafter(rounded, rounded.new_tensor(-math.inf)), rounded)


def _mine_chunk(queries: torch.Tensor, corpus: torch.Tensor, k: int, corpus_chunk: int,
                ceiling: torch.Tensor | None, excluded: tuple[torch.Tensor, torch.Tensor],
                score: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The best ``k`` scores and corpus indices ``(c, k)`` of a chunk of ``c`` queries."""
    rows = queries.shape[0]
    best_scores = queries.new_full((rows, k), -math.inf)
    best = torch.full((rows, k), PADDING, dtype=torch.long, device=queries.device)
    excluded_row, excluded_item = excluded
    for start in range(0, corpus.shape[0], corpus_chunk):
        block = corpus[start:start + corpus_chunk].to(queries.device, non_blocking=True)
        scores = queries @ block.T
        if score == "dot" and not torch.isfinite(scores).all():
            raise ValueError("queries and corpus give dot-product scores beyond the range of "
                             f"{scores.dtype} (overflow): scale them down or use "
                             "score='cosine'")
        inside = (excluded_item >= start) & (excluded_item < start + block.shape[0])
        scores[excluded_row[inside], excluded_item[inside] - start] = -math.inf
        block_scores, block_best = _filtered_top(scores, min(k, scores.shape[1]), ceiling)
        best_scores, best = _merge(best_scores, best, block_scores, block_best + start, k)
    return best_scores, best.masked_fill(best_scores == -math.inf, PADDING)


def _filtered_top(scores: torch.Tensor, k: int, ceiling: torch.Tensor | None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_exact_top` of the scores ``<= ceiling`` (per row). A row whose highest score
    passes has nothing to filter; only the other rows are filtered (a pass over their
    scores) and ranked again."""
    values, columns = _exact_top(scores, k)
    if ceiling is None:
        return values, columns
    over = torch.nonzero(values[:, 0] > ceiling).flatten()
    if over.numel():
        again = scores[over]
        again.masked_fill_(again > ceiling[over, None], -math.inf)
        values[over], columns[over] = _exact_top(again, k)
    return values, columns


def _exact_top(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's best ``k`` scores of ``scores`` ``(c, n)`` and their columns, the set exact
    under the tie rule (lower columns first). ``torch.topk`` of ``k + 1`` tells where it had
    to choose among scores equal to its ``k``-th (the next one equals it); in those rows the
    lowest columns among the tied scores are taken instead."""
    if k == scores.shape[1]:  # every column: nothing to choose
        return scores.topk(k, dim=1)
    values, columns = scores.topk(k + 1, dim=1)
    following, values, columns = values[:, k], values[:, :k], columns[:, :k]
    tied = torch.nonzero((following == values[:, -1]) & (following > -math.inf)).flatten()
    if tied.numel():
        rows = scores[tied]
        threshold = values[tied, -1:]
        room = k - (values[tied] > threshold).sum(dim=1, keepdim=True)
        equal = rows == threshold
        keep = (rows > threshold) | (equal & (equal.cumsum(dim=1) <= room))
        values[tied], columns[tied] = rows.masked_fill(~keep, -math.inf).topk(k, dim=1)
    return values, columns


def _merge(scores: torch.Tensor, found: torch.Tensor, new_scores: torch.Tensor,
           new_found: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The best ``k`` of two sets of (score, corpus index) per row: score descending, then
    index ascending (a sort by index, then a stable sort by score)."""
    scores, found = torch.cat([scores, new_scores], 1), torch.cat([found, new_found], 1)
    order = found.argsort(dim=1, stable=True)
    scores, found = scores.gather(1, order), found.gather(1, order)
    order = scores.argsort(dim=1, descending=True, stable=True)[:, :k]
    return scores.gather(1, order), found.gather(1, order)
