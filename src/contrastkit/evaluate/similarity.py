"""The paper's Table 1 measurement on a trained encoder."""

from __future__ import annotations

import torch

from contrastkit.data import two_views
from contrastkit.geometry import SimilarityStats, similarity_stats
from contrastkit.models import Encoder


@torch.no_grad()
def augmented_pair_stats(encoder: Encoder, images: torch.Tensor, augment, pairs: int = 5000,
                         seed: int = 0, device: torch.device | str = "cpu",
                         batch_size: int = 512) -> SimilarityStats:
    """Similarity statistics of ``pairs`` positive pairs made by augmenting training images
    twice, at the projector output, with the encoder in eval mode (paper Table 1: 5 000
    pairs; the variance of all negative-pair cosine similarities among them).

    ``images`` are ``uint8`` ``(N, C, H, W)``; when ``N > pairs`` a seeded random subset is
    used.
    """
    generator = torch.Generator().manual_seed(seed)
    if images.shape[0] > pairs:
        images = images[torch.randperm(images.shape[0], generator=generator)[:pairs]]
    was_training = encoder.training
    encoder.eval()
    u, v = [], []
    for start in range(0, images.shape[0], batch_size):
        batch = images[start:start + batch_size].to(device)
        view1, view2 = two_views(batch, augment, generator)
        u.append(encoder(view1).float().cpu())
        v.append(encoder(view2).float().cpu())
    encoder.train(was_training)
    return similarity_stats(torch.cat(u), torch.cat(v))
