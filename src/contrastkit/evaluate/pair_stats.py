"""The paper's Table 1 measurement on a trained encoder."""

from __future__ import annotations

import torch

from contrastkit.data import as_unit_float
from contrastkit.geometry import SimilarityStats, measure_embeddings, similarity_stats
from contrastkit.models import Encoder


def augmented_pair_stats(encoder: Encoder, dataset, augment, pairs: int = 5000,
                         seed: int = 0, device: torch.device | str = "cpu",
                         batch_size: int = 512) -> SimilarityStats:
    """Similarity statistics of ``pairs`` positive pairs made by augmenting training images
    twice, at the projector output, with the encoder in eval mode (paper Table 1: 5 000
    pairs; the variance of all negative-pair cosine similarities among them).

    The protocol is :func:`contrastkit.geometry.measure_embeddings` (a seeded subset of
    ``dataset``, whose items are ``uint8`` images ``(C, H, W)`` or ``(image, label)``); when the
    dataset has at most ``pairs`` images, all of them are used.
    """
    u, v, _ = measure_embeddings(
        encoder, dataset, lambda images, generator: augment(as_unit_float(images), generator),
        n_pairs=min(pairs, len(dataset)), seed=seed, batch_size=batch_size, device=device,
    )
    return similarity_stats(u, v)
