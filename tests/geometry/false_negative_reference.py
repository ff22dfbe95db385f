"""The false-negative statistics by a float64 loop over the pairs of each batch, and batches
with planted ties, same-class pairs and duplicates to feed it and the code under test."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import torch


def lattice_batch(rows: int, d: int, generator: torch.Generator, duplicated: int = 2):
    """Anchors and positives ``(rows, d)`` whose every dot product is exact in float64: each
    row has four entries of +-1/2 and zeros elsewhere (a unit vector, so normalizing changes
    nothing), so similarities are multiples of 1/4 and ties are frequent; the positives of
    ``duplicated`` rows are copies of row 0's positive (a duplicate's embedding: an exact tie
    with row 0's positive). Returns ``u, v, duplicate ids`` (the copies share row 0's id)."""
    def rows_of(count):
        x = torch.zeros(count, d, dtype=torch.float64)
        for row in x:
            columns = torch.randperm(d, generator=generator)[:4]
            signs = torch.randint(0, 2, (4,), generator=generator) * 2 - 1
            row[columns] = 0.5 * signs.double()
        return x

    u, v = rows_of(rows), rows_of(rows)
    copies = torch.randperm(rows - 1, generator=generator)[:duplicated] + 1
    v[copies] = v[0].clone()
    ids = torch.arange(rows)
    ids[copies] = 0
    return u, v, ids


def reference(batches, band_highs=None, labels=None, duplicates=None) -> dict[str, float]:
    """The counts and shares of ``geometry.false_negatives`` over all the ``batches`` (pairs
    ``(u, v)``), by a loop over their negative pairs ``(i, j)``, ``i != j``: above the positive
    when ``u_i . v_j >= u_i . v_i``, above the band when ``u_i . v_j > band_highs[b]`` (no
    band count where ``band_highs`` is None or holds None); same-class / duplicate when the
    batch's ``labels`` / ``duplicates`` of ``i`` and ``j`` agree."""
    counts: Counter = Counter()
    banded_pairs = 0
    for index, (u, v) in enumerate(batches):
        u, v = _unit(u), _unit(v)
        high = None if band_highs is None else band_highs[index]
        groups = {name: ids[index] for name, ids in (("same_class", labels),
                                                     ("duplicate", duplicates))
                  if ids is not None}
        for i, j in itertools.product(range(len(u)), repeat=2):
            if i == j:
                continue
            similarity = float(u[i] @ v[j])
            tests = {"above_positive": similarity >= float(u[i] @ v[i])}
            if high is not None:
                tests["above_band"] = similarity > high
                banded_pairs += 1
            counts["negative_pairs"] += 1
            for test, passed in tests.items():
                counts[f"negatives_{test}"] += passed
            for group, ids in groups.items():
                if int(ids[i]) == int(ids[j]):
                    counts[f"negative_pairs_{group}"] += 1
                    for test, passed in tests.items():
                        counts[f"negatives_{test}_{group}"] += passed
    result = {key: float(value) for key, value in counts.items()}
    for key in ("negatives_above_positive", "negatives_above_band"):
        result.setdefault(key, 0.0)
    if not banded_pairs:
        del result["negatives_above_band"]
    for group in ("same_class", "duplicate"):
        if (group == "same_class" and labels is not None) or (
                group == "duplicate" and duplicates is not None):
            result.setdefault(f"negative_pairs_{group}", 0.0)
            result.setdefault(f"negatives_above_positive_{group}", 0.0)
            if banded_pairs:
                result.setdefault(f"negatives_above_band_{group}", 0.0)
    result["negatives_above_positive_share"] = (result["negatives_above_positive"]
                                                / result["negative_pairs"])
    if banded_pairs:
        result["negatives_above_band_share"] = result["negatives_above_band"] / banded_pairs
    return result


def _unit(x) -> np.ndarray:
    x = torch.as_tensor(x).double().numpy()
    return x / np.linalg.norm(x, axis=1, keepdims=True)
