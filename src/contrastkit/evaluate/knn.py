"""Weighted k-nearest-neighbour classification on cosine similarity (Wu et al., 2018)."""

from __future__ import annotations

import torch

from contrastkit.rows import unit_rows

from .metrics import topk_accuracy


def neighbours(k: int, train_size: int) -> int:
    """The number of training points that vote: ``k``, capped at ``train_size``."""
    return min(k, train_size)


def knn_scores(train_features: torch.Tensor, train_labels: torch.Tensor,
               test_features: torch.Tensor, num_classes: int, k: int = 200,
               temperature: float = 0.1, chunk: int = 1024) -> torch.Tensor:
    """Class scores ``(N_test, num_classes)``: each test point's ``k`` most cosine-similar
    training points vote for their class with weight ``exp(similarity / temperature)``.

    ``k`` is capped at the number of training points. The scores are computed on the
    features' device (a GPU's, for the online probe).
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if train_features.shape[0] != train_labels.shape[0]:
        raise ValueError(f"train_labels must have {train_features.shape[0]} entries, "
                         f"got {train_labels.shape[0]}")
    k = neighbours(k, train_features.shape[0])
    bank = unit_rows(train_features.float())
    queries = unit_rows(test_features.float())
    train_labels = train_labels.to(bank.device)
    scores = []
    for start in range(0, queries.shape[0], chunk):
        similarity = queries[start:start + chunk] @ bank.T
        top_similarity, top_index = similarity.topk(k, dim=1)
        weights = (top_similarity / temperature).exp()
        votes = torch.zeros(similarity.shape[0], num_classes, device=similarity.device)
        votes.scatter_add_(1, train_labels[top_index], weights)
        scores.append(votes)
    return torch.cat(scores)


def knn_accuracy(train_features: torch.Tensor, train_labels: torch.Tensor,
                 test_features: torch.Tensor, test_labels: torch.Tensor, num_classes: int,
                 k: int = 200, temperature: float = 0.1) -> dict[str, float]:
    """Top-1 and top-5 accuracy (in %) of :func:`knn_scores` (k = 200, t = 0.1 by default)."""
    scores = knn_scores(train_features, train_labels, test_features, num_classes, k, temperature)
    return topk_accuracy(scores, test_labels)
