"""Frozen-backbone features of a dataset, without augmentation."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch

from contrastkit.data import as_unit_float
from contrastkit.models import Encoder
from contrastkit.typing import Samples


@torch.no_grad()
def extract_features(encoder: torch.nn.Module, dataset: Samples, batch_size: int = 512,
                     device: torch.device | str = "cpu", projector: bool = False,
                     num_workers: int = 0, on_batch: Callable[[int], None] | None = None,
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Backbone features (or projector outputs with ``projector=True``) of every image of
    ``dataset`` (``uint8`` images scaled to ``[0, 1]``, floating-point samples as they are), in
    order, with the encoder in eval mode; ``on_batch(images)`` after each
    batch when given. Returns ``(features, labels)`` on the CPU in float32."""
    from torch.utils.data import DataLoader

    from contrastkit.train.batches import batch_loader

    was_training = encoder.training
    encoder.eval()
    order = list(range(len(dataset)))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    loader: DataLoader = batch_loader(dataset, batches, num_workers)
    features, labels = [], []
    for images, batch_labels in loader:
        images = as_unit_float(images.to(device)).float()
        # without the projector: the backbone's features, of a models.Encoder or alike
        out = encoder(images) if projector else cast(Encoder, encoder).features(images)
        features.append(out.float().cpu())
        labels.append(batch_labels)
        if on_batch is not None:
            on_batch(len(batch_labels))
    encoder.train(was_training)
    return torch.cat(features), torch.cat(labels).long()
