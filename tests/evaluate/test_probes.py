"""Linear probe and kNN: right on separable features, chance on noise, exact against loops."""

import math

import pytest
import torch
import torch.nn.functional as F

from contrastkit.data import gaussian_mixture
from contrastkit.evaluate import knn_accuracy, knn_scores, linear_probe, topk_accuracy


def split(x, y, train=600):
    return x[:train], y[:train], x[train:], y[train:]


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_linear_probe_separates_separable_features(solver):
    x, y = gaussian_mixture(1000, 16, num_classes=10, separation=4.0, noise=0.3, seed=0)
    result = linear_probe(*split(x, y), num_classes=10, epochs=30, solver=solver)
    assert result["top1"] > 98.0 and result["top5"] == 100.0


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_linear_probe_is_at_chance_on_noise(solver):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3000, 16, generator=generator)
    y = torch.randint(0, 10, (3000,), generator=generator)
    result = linear_probe(*split(x, y, train=1000), num_classes=10, epochs=30, solver=solver)
    # 2000 test points: chance is 10 % (top-1) and 50 % (top-5), standard error about 0.7 / 1.1
    assert abs(result["top1"] - 10.0) < 4.0 and abs(result["top5"] - 50.0) < 6.0


def test_knn_matches_a_loop_reference():
    generator = torch.Generator().manual_seed(1)
    bank, queries = torch.randn(30, 5, generator=generator), torch.randn(7, 5, generator=generator)
    labels = torch.randint(0, 4, (30,), generator=generator)
    scores = knn_scores(bank, labels, queries, num_classes=4, k=6, temperature=0.5)
    for q in range(7):
        similarities = [F.cosine_similarity(queries[q], bank[i], dim=0).item() for i in range(30)]
        nearest = sorted(range(30), key=lambda i: -similarities[i])[:6]
        expected = [0.0] * 4
        for i in nearest:
            expected[int(labels[i])] += math.exp(similarities[i] / 0.5)
        assert scores[q].tolist() == pytest.approx(expected, rel=1e-5)


def test_knn_on_clusters_and_noise():
    x, y = gaussian_mixture(1000, 16, num_classes=10, separation=4.0, noise=0.3, seed=2)
    assert knn_accuracy(*split(x, y), num_classes=10)["top1"] > 98.0
    generator = torch.Generator().manual_seed(3)
    noise = torch.randn(3000, 16, generator=generator)
    labels = torch.randint(0, 10, (3000,), generator=generator)
    assert abs(knn_accuracy(*split(noise, labels, 1000), num_classes=10)["top1"] - 10) < 4


def test_topk_accuracy_counts_hits():
    scores = torch.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.3], [0.2, 0.3, 0.5]])
    labels = torch.tensor([1, 2, 0])
    result = topk_accuracy(scores, labels, ks=(1, 2))
    assert result["top1"] == pytest.approx(100 / 3) and result["top2"] == pytest.approx(200 / 3)


def test_bad_arguments_are_rejected():
    x, y = torch.randn(10, 3), torch.zeros(10, dtype=torch.long)
    with pytest.raises(ValueError, match="temperature"):
        knn_scores(x, y, x, 2, temperature=0.0)
    with pytest.raises(ValueError, match="train_labels"):
        knn_scores(x, y[:5], x, 2)
    with pytest.raises(ValueError, match="features must be"):
        linear_probe(x, y[:5], x, y, 2)
