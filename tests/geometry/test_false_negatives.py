"""geometry.false_negatives against a float64 loop over the pairs, with planted ties,
same-class pairs and duplicates; the theory's band; bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contrastkit.geometry.false_negatives import false_negative_stats
from contrastkit.theory import (
    minibatch_optimum,
    minibatch_variance_bounds,
    negative_similarity_band,
)
from tests.geometry.false_negative_reference import lattice_batch, reference


def _gaussian(rows, d, generator):
    u = torch.randn(rows, d, generator=generator, dtype=torch.float64)
    return u, u + 0.8 * torch.randn(rows, d, generator=generator, dtype=torch.float64)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["gaussian", "lattice"])
@pytest.mark.parametrize("block_size", [3, 1024])
def test_the_statistics_are_those_of_a_loop_over_the_pairs(seed, kind, block_size):
    """Counts equal exactly (they are integers), shares as the counts over the pairs; the
    lattice batches plant exact ties with the positive (copies of a positive, and frequent
    equal similarities), the labels same-class pairs; blocks of 3 rows split the matrix."""
    generator = torch.Generator().manual_seed(seed)
    rows = 7 + seed
    if kind == "lattice":
        u, v, duplicates = lattice_batch(rows, 6, generator)
    else:
        u, v = _gaussian(rows, 5, generator)
        duplicates = torch.randint(0, 3, (rows,), generator=generator)
    labels = torch.randint(0, 2, (rows,), generator=generator)
    n, m = 40, rows
    stats = false_negative_stats(u, v, dataset_size=n, batch_size=m, labels=labels,
                                 duplicates=duplicates, block_size=block_size)
    band = negative_similarity_band(n, m)
    expected = reference([(u, v)], [band.high], [labels], [duplicates])
    assert {key: stats[key] for key in expected} == pytest.approx(expected, abs=1e-15)
    assert set(stats) == set(expected) | {"theory_negative_band_low",
                                          "theory_negative_band_high"}
    assert (stats["theory_negative_band_low"], stats["theory_negative_band_high"]) == band
    if kind == "lattice":  # the planted duplicates tie with row 0's positive: counted
        assert stats["negatives_above_positive_duplicate"] >= 2


def test_a_tie_with_the_positive_counts_as_above():
    """Row 1's positive is a copy of row 0's, so anchor 0 scores it exactly as its own
    positive (a tie: counted) and anchor 1 scores row 0's exactly as its own."""
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    stats = false_negative_stats(u, v)
    # anchor 0: v_1 ties (1 = 1); anchor 1: v_0 ties; anchor 2 (positive 0): v_0, v_1 tie at 0
    assert stats["negatives_above_positive"] == 4 == reference([(u, v)])[
        "negatives_above_positive"]
    assert stats["negatives_above_positive_share"] == 4 / 6
    assert "negatives_above_band" not in stats  # no dataset or batch size: no band


def test_a_negative_on_the_band_edge_is_not_above_it():
    """For n = 9, m = 5 the band's upper edge is exactly 1/4 (-1/8 + sqrt(9/64)); these rows
    (four entries of +-1/2) have similarities that are exact multiples of 1/4, two negatives
    on the edge and two above it."""
    assert negative_similarity_band(9, 5).high == 0.25
    half = 0.5
    u = torch.tensor([[half] * 4 + [0.0] * 4, [0.0] * 4 + [half] * 4,
                      [half, 0, 0, 0, half, half, half, 0]], dtype=torch.float64)
    stats = false_negative_stats(u, u.clone(), dataset_size=9, batch_size=5)
    expected = reference([(u, u.clone())], [0.25])
    assert stats["negatives_above_band"] == expected["negatives_above_band"] == 2
    assert (u @ u.T == 0.25).sum() == 2


def test_without_labels_or_duplicates_there_are_no_group_counts():
    generator = torch.Generator().manual_seed(0)
    stats = false_negative_stats(*_gaussian(6, 4, generator))
    assert not [key for key in stats if key.endswith(("same_class", "duplicate"))]
    assert stats["negative_pairs"] == 30


def test_the_band_is_theorem_5_5_mean_plus_minus_its_largest_standard_deviation():
    """At the fixed mini-batch optima of Theorem 5.5 (theory.minibatch_optimum, Fig. 2) the
    negatives' mean is the band's centre and their variance is at most the band's half-width
    squared, attained at the "max" optimum; at m = n the band is the point -1/(n-1)."""
    for n, m in ((4, 2), (12, 3), (12, 4)):
        band = negative_similarity_band(n, m)
        for extreme in ("min", "max"):
            u, v = minibatch_optimum(n, m, d=n, extreme=extreme)
            negatives = (u @ v.T)[~np.eye(n, dtype=bool)]
            assert (band.low + band.high) / 2 == pytest.approx(negatives.mean(), abs=1e-12)
            assert negatives.var() <= ((band.high - band.low) / 2) ** 2 + 1e-12
            # Cantelli: at most half of the negatives above the upper edge
            assert (negatives > band.high).mean() <= 0.5
        assert ((band.high - band.low) / 2) ** 2 == pytest.approx(negatives.var(), abs=1e-12)
        assert ((band.high - band.low) / 2) ** 2 == pytest.approx(
            minibatch_variance_bounds(n, m).high, rel=1e-12)
    assert negative_similarity_band(9, 9) == (-1 / 8, -1 / 8)
    assert math.isclose(negative_similarity_band(4, 2).high, -1 / 3 + math.sqrt(8 / 9))


@pytest.mark.parametrize("arguments, message", [
    ({"dataset_size": 100}, "dataset_size and batch_size must be given together"),
    ({"batch_size": 6}, "dataset_size and batch_size must be given together"),
    ({"dataset_size": 5, "batch_size": 6}, "batch_size must be <= dataset_size = 5, got 6"),
    ({"dataset_size": 100, "batch_size": 1}, "batch_size must be >= 2"),
    ({"dataset_size": 1.5, "batch_size": 6}, "dataset_size must be an integer"),
    ({"labels": torch.zeros(5, dtype=torch.long)}, "labels must have one entry per row"),
    ({"duplicates": torch.zeros(6)}, "duplicates must hold integer class ids"),
    ({"duplicates": torch.zeros(6, 2, dtype=torch.long)}, "duplicates must be 1-D"),
    ({"block_size": 0}, "block_size must be >= 1"),
])
def test_bad_input_is_named(arguments, message):
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match=message):
        false_negative_stats(*_gaussian(6, 4, generator), **arguments)


def test_views_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match="u and v must have the same shape"):
        false_negative_stats(torch.randn(6, 4), torch.randn(5, 4))
