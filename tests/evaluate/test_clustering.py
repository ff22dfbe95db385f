"""K-means accuracy with Hungarian matching, against a brute force over every matching."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from contrastkit.evaluate.clustering import clustering_accuracy, kmeans_accuracy


def _best_over_every_matching(clusters, labels) -> float:
    classes = sorted(set(labels))
    best = 0.0
    for order in itertools.permutations(classes):
        mapping = dict(zip(sorted(set(clusters)), order, strict=False))
        best = max(best, np.mean([mapping.get(c) == y for c, y in zip(clusters, labels,
                                                                          strict=True)]))
    return float(best)


@pytest.mark.parametrize("seed", range(5))
def test_hungarian_matching_equals_the_best_of_every_matching(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, 40)
    clusters = np.where(rng.random(40) < 0.6, (labels + 1) % 4, rng.integers(0, 4, 40))
    assert clustering_accuracy(clusters, labels) == pytest.approx(
        _best_over_every_matching(list(clusters), list(labels)), abs=1e-15)


def test_kmeans_separates_well_separated_blobs_whatever_their_names():
    rng = np.random.default_rng(0)
    labels = np.repeat([5, 7, 9], 30)
    centres = {5: (0.0, 0.0), 7: (10.0, 0.0), 9: (0.0, 10.0)}
    points = np.array([centres[y] for y in labels]) + rng.normal(0, 0.3, (90, 2))
    assert kmeans_accuracy(points, labels, seed=1) == 1.0


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="clusters and labels must be non-empty and of one "
                                         "length"):
        clustering_accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="labels must be a flat sequence of integers"):
        clustering_accuracy([0, 1], [0.5, 1.0])
    with pytest.raises(ValueError, match=r"points must have shape \(n, d\) with n = 3"):
        kmeans_accuracy(np.zeros((2, 2)), [0, 1, 1])
