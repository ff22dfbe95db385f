"""The paper's Table 1 measurement on a trained encoder, and LMCL's distance measurements
(Chen et al., ICML 2021: the share of pairs inside the margin band and the distance histogram of
their Fig. 2) on the same pairs."""

from __future__ import annotations

import torch

from contrastkit.data import as_unit_float
from contrastkit.geometry import (
    SimilarityStats,
    margin_fraction,
    measure_embeddings,
    similarity_histogram,
    similarity_stats,
)
from contrastkit.typing import Augment, Embedder, Samples


def augmented_pairs(encoder: Embedder, dataset: Samples, augment: Augment, pairs: int = 5000,
                    seed: int = 0,
                    device: torch.device | str = "cpu", batch_size: int = 512
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The projector outputs ``u, v`` of ``pairs`` positive pairs made by augmenting training
    images twice, with the encoder in eval mode: the protocol of
    :func:`contrastkit.geometry.measure_embeddings` (a seeded subset of ``dataset``, whose
    items are ``uint8`` images ``(C, H, W)`` or ``(image, label)``); when the dataset has at
    most ``pairs`` images, all of them are used."""
    u, v, _ = measure_embeddings(
        encoder, dataset, lambda images, generator: augment(as_unit_float(images), generator),
        n_pairs=min(pairs, len(dataset)), seed=seed, batch_size=batch_size, device=device,
    )
    return u, v


def augmented_pair_stats(encoder: Embedder, dataset: Samples, augment: Augment, pairs: int = 5000,
                         seed: int = 0, device: torch.device | str = "cpu",
                         batch_size: int = 512) -> SimilarityStats:
    """Similarity statistics of the pairs of :func:`augmented_pairs` (paper Table 1: 5 000
    pairs; the variance of all negative-pair cosine similarities among them)."""
    return similarity_stats(*augmented_pairs(encoder, dataset, augment, pairs, seed, device,
                                             batch_size))


def distance_measurements(u: torch.Tensor, v: torch.Tensor, delta_plus: float,
                          delta_minus: float, bins: int = 50) -> dict:
    """LMCL's distance measurements of the pairs ``u, v``: ``margin_fraction``, the share of
    negative pairs ``(u_i, v_j), i != j`` whose distance ``(1 - cos) / 2`` lies inside
    ``(delta_plus, delta_minus)``, and ``distance_histogram``, the counts of the positive,
    negative and within-view distances in ``bins`` bins over ``[0, 1]`` (their Fig. 2)."""
    histogram = similarity_histogram(u, v, bins=bins, scale="distance")
    return {"margin_fraction": margin_fraction(u, delta_plus, delta_minus, v=v),
            "distance_histogram": histogram.as_dict()}
