"""Which corpus items are relevant to each query, as
:func:`~contrastkit.evaluate.ranking.retrieval_metrics` takes it, checked and put in compressed
sparse rows: one index per query, a row of indices per query, a list of indices per query (any
number of positives each), or :class:`Relevance` arrays; with an optional grade per relevant item
(graded relevance, for nDCG)."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import NamedTuple

import torch


class Relevance(NamedTuple):
    """Relevant corpus items in compressed sparse rows: query ``q``'s are
    ``indices[offsets[q]:offsets[q + 1]]`` (``offsets`` ``(Q + 1,)``, from 0 to ``len(indices)``,
    non-decreasing)."""

    offsets: torch.Tensor
    indices: torch.Tensor


def relevance_rows(relevant: object, grades: object, num_queries: int, num_corpus: int, *,
                   name: str = "relevant", allow_empty: bool = False
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(offsets (Q + 1,), indices (nnz,), grades (nnz,))`` on the CPU, int64, int64 and
    float64, from ``relevant`` in any of these forms:

    - a flat integer sequence or tensor ``(Q,)``: one relevant corpus index per query;
    - an integer tensor ``(Q, R)``: ``R`` relevant indices per query;
    - a sequence of ``Q`` integer sequences: any number per query;
    - :class:`Relevance` ``(offsets, indices)``.

    ``grades`` (default: 1 for every relevant item) has the same form as ``relevant`` (with
    :class:`Relevance`, a flat ``(nnz,)`` aligned with its ``indices``), each grade finite and
    ``> 0``. Every query needs at least one relevant item, indices lie in ``[0, num_corpus)``
    and none repeats within a query; else a ``ValueError`` naming the argument (``name``).
    With ``allow_empty``, a query may have none (the corpus items a miner leaves out).
    """
    if isinstance(relevant, Relevance):
        offsets = _integers(f"{name}.offsets", relevant.offsets, flat=True)
        indices = _integers(f"{name}.indices", relevant.indices, flat=True)
        _check_offsets(offsets, indices.shape[0], num_queries, name)
    else:
        counts, indices = _rows(name, relevant, num_queries, _integers)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    counts = offsets[1:] - offsets[:-1]
    if not allow_empty and not (counts > 0).all():
        empty = torch.nonzero(counts == 0).flatten()[:5].tolist()
        raise ValueError(f"{name} must give every query at least one relevant corpus item; "
                         f"queries {empty} (first 5) have none")
    if indices.numel() and (indices.min() < 0 or indices.max() >= num_corpus):
        raise ValueError(f"{name} must hold corpus indices in [0, {num_corpus}), got values "
                         f"in [{int(indices.min())}, {int(indices.max())}]")
    query = torch.repeat_interleave(torch.arange(num_queries), counts)
    pairs = query * num_corpus + indices
    if torch.unique(pairs).shape[0] != pairs.shape[0]:
        repeated = pairs.sort().values
        twice = repeated[1:][repeated[1:] == repeated[:-1]][0]
        raise ValueError(f"{name} must not repeat an index within a query; query "
                         f"{int(twice // num_corpus)} names index {int(twice % num_corpus)} "
                         f"more than once")
    return offsets, indices, _grades(grades, relevant, counts)


def _grades(grades: object, relevant: object, counts: torch.Tensor) -> torch.Tensor:
    if grades is None:
        return torch.ones(int(counts.sum()), dtype=torch.float64)
    if isinstance(relevant, Relevance):
        values = _reals("grades", grades, flat=True)
        if values.shape[0] != int(counts.sum()):
            raise ValueError(f"grades must have one entry per relevant index "
                             f"({int(counts.sum())}), got {values.shape[0]}")
    else:
        grade_counts, values = _rows("grades", grades, counts.shape[0], _reals)
        if not torch.equal(grade_counts, counts):
            query = int(torch.nonzero(grade_counts != counts)[0])
            raise ValueError(f"grades must give one grade per relevant index; query {query} "
                             f"has {int(counts[query])} indices and "
                             f"{int(grade_counts[query])} grades")
    if not (torch.isfinite(values) & (values > 0)).all():
        raise ValueError("grades must be finite and > 0 (an item of grade 0 is not relevant: "
                         "leave it out)")
    return values


def _rows(name: str, value: object, num_queries: int, convert: Callable[..., torch.Tensor]
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(counts (Q,), flat values)`` of a flat sequence (one per query), a matrix (a row per
    query) or a sequence of sequences, each converted by ``convert``."""
    if isinstance(value, (list, tuple)) and not all(_scalar(item) for item in value):
        rows = [convert(f"{name}[{query}]", row, flat=True) for query, row in enumerate(value)]
        counts = torch.tensor([row.shape[0] for row in rows], dtype=torch.int64)
        values = torch.cat(rows) if rows else convert(name, [], flat=True)
    else:
        values = convert(name, value, flat=False)
        counts = torch.full((values.shape[0],), values.shape[1] if values.ndim == 2 else 1,
                            dtype=torch.int64)
        values = values.flatten()
    if counts.shape[0] != num_queries:
        raise ValueError(f"{name} must have one entry per query ({num_queries}), "
                         f"got {counts.shape[0]}")
    return counts, values


def _scalar(item: object) -> bool:
    if isinstance(item, torch.Tensor):
        return item.ndim == 0
    return not isinstance(item, bool) and isinstance(item, (Integral, float))


def _tensor(name: str, value: object, flat: bool, kind: str) -> torch.Tensor:
    try:
        tensor = torch.as_tensor(value).cpu()
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError(f"{name} must be a sequence or tensor of {kind}, got "
                         f"{type(value).__name__}") from error
    if tensor.ndim == 0 and flat:
        tensor = tensor[None]
    if tensor.ndim != 1 and (flat or tensor.ndim != 2):
        raise ValueError(f"{name} must be {'flat' if flat else 'flat or a matrix'}, got shape "
                         f"{tuple(tensor.shape)}")
    return tensor


def _integers(name: str, value: object, flat: bool) -> torch.Tensor:
    tensor = _tensor(name, value, flat, "integers")
    if tensor.numel() == 0:
        return tensor.long()
    if tensor.dtype == torch.bool or tensor.is_floating_point() or tensor.is_complex():
        raise ValueError(f"{name} must hold integers, got dtype {tensor.dtype}")
    return tensor.long()


def _reals(name: str, value: object, flat: bool) -> torch.Tensor:
    tensor = _tensor(name, value, flat, "numbers")
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise ValueError(f"{name} must hold real numbers, got dtype {tensor.dtype}")
    return tensor.double()


def _check_offsets(offsets: torch.Tensor, nnz: int, num_queries: int, name: str) -> None:
    if offsets.shape[0] != num_queries + 1:
        raise ValueError(f"{name}.offsets must have one entry per query plus one "
                         f"({num_queries + 1}), got {offsets.shape[0]}")
    if offsets[0] != 0 or offsets[-1] != nnz or (offsets[1:] < offsets[:-1]).any():
        raise ValueError(f"{name}.offsets must rise from 0 to len({name}.indices) "
                         f"({nnz}), never falling; got {offsets[:5].tolist()}...")
