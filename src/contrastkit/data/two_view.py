"""Two augmented views of each sample, for contrastive pretraining."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from contrastkit.typing import Augment, Samples

from .seeding import derived_generator


def as_unit_float(images: torch.Tensor) -> torch.Tensor:
    """``uint8`` images scaled to float in ``[0, 1]``; float images are returned unchanged."""
    return images if images.is_floating_point() else images.float().div_(255)


def two_views(images: torch.Tensor, augment: Augment, generator: torch.Generator
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Two independent augmentations of a batch of ``uint8`` or float images ``(B, C, H, W)``.

    ``uint8`` images are scaled to ``[0, 1]`` first. Returns ``(view1, view2)``.
    """
    images = as_unit_float(images)
    return augment(images, generator), augment(images, generator)


class TwoViewDataset(Dataset):
    """Wraps a dataset of ``(image, label)`` to yield ``(view1, view2, label, index)``.

    Each item's views are drawn from a generator seeded with ``(seed, epoch, index)``, so they
    are reproducible and independent of the order and the worker that loads them; call
    :meth:`set_epoch` to get new views each epoch. For speed, the training loop augments whole
    batches on the device with :func:`two_views` instead.
    """

    def __init__(self, dataset: Samples, augment: Augment, seed: int = 0) -> None:
        self.dataset = dataset
        self.augment = augment
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, Any, int]:
        image, label = self.dataset[index]
        generator = derived_generator(self.seed, self.epoch, index)
        view1, view2 = two_views(image.unsqueeze(0), self.augment, generator)
        return view1[0], view2[0], label, index
