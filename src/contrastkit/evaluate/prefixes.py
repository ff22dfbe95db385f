"""Evaluation per nested prefix of the embedding, for a run trained with ``matryoshka_dims``
(Matryoshka representation learning, Kusupati et al., NeurIPS 2022, arXiv:2205.13147): each
measurement repeated on the first ``d`` coordinates of the embeddings, for each ``d``. The
similarities are cosines, so each prefix is normalized on its own, as the loss saw it.

``eval.json`` holds them under :data:`PREFIXES`, by dimension: ``{"matryoshka": {"64":
{"query_to_corpus_r1": ...}, "128": {...}}}``, with the keys of the full embedding's results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from contrastkit.typing import Samples

from .features import extract_features
from .knn import knn_accuracy

#: The key of eval.json's results per prefix.
PREFIXES = "matryoshka"


def per_prefix(dims: Sequence[int], measure: Callable[..., dict],
               *embeddings: torch.Tensor) -> dict[str, dict]:
    """``measure`` of the first ``d`` columns of every one of ``embeddings``, for each ``d`` of
    ``dims``, keyed by ``str(d)`` (``{}`` without ``dims``)."""
    return {str(dim): measure(*(rows[:, :dim] for rows in embeddings)) for dim in dims}


def knn_per_prefix(encoder: torch.nn.Module, train: Samples, test: Samples,
                   device: torch.device, dims: Sequence[int], k: int = 200,
                   temperature: float = 0.1, num_workers: int = 0) -> dict[str, dict]:
    """The kNN classifier (:func:`~contrastkit.evaluate.knn.knn_accuracy`) of each prefix of
    the projected embedding (the encoder's output, where the loss applies; the probes read the
    backbone's features, which have no prefixes) of the test split, the training split as the
    bank: ``{"64": {"knn_top1": ..., "knn_top5": ...}, ...}`` (in %)."""
    train_z, train_y = extract_features(encoder, train, device=device, projector=True,
                                        num_workers=num_workers)
    test_z, test_y = extract_features(encoder, test, device=device, projector=True,
                                      num_workers=num_workers)
    classes = train.info.num_classes  # type: ignore[attr-defined]  # a dataset of the registry

    def measure(bank: torch.Tensor, queries: torch.Tensor) -> dict[str, float]:
        knn = knn_accuracy(bank, train_y, queries, test_y, classes, k, temperature)
        return {"knn_top1": knn["top1"], "knn_top5": knn["top5"]}

    return per_prefix(dims, measure, train_z, test_z)
