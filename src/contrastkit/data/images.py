"""In-memory image datasets: ``uint8`` tensors ``(N, C, H, W)`` plus integer labels."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset


@dataclass(frozen=True)
class DatasetInfo:
    """What the models and augmentations need to know about a dataset.

    Attributes:
        name: registry name (``"digits"``, ``"cifar10"``, ...).
        channels, image_size: shape of one image, ``(channels, image_size, image_size)``.
        num_classes: number of label classes.
        mean, std: per-channel statistics of the pixel values in ``[0, 1]``, used to
            normalize the network's input.
    """

    name: str
    channels: int
    image_size: int
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]


class ImageTensorDataset(Dataset):
    """Images held in memory as one ``uint8`` tensor ``(N, C, H, W)`` with labels ``(N,)``.

    Items are ``(image, label)``; :meth:`__getitems__` returns a whole batch at once, which
    ``torch.utils.data.DataLoader`` uses to skip per-item collation.
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, info: DatasetInfo) -> None:
        if images.dtype != torch.uint8 or images.ndim != 4:
            raise ValueError(f"images must be a uint8 tensor (N, C, H, W), got {images.dtype} "
                             f"of shape {tuple(images.shape)}")
        if labels.shape != (images.shape[0],):
            raise ValueError(f"labels must have shape ({images.shape[0]},), "
                             f"got {tuple(labels.shape)}")
        self.images = images
        self.labels = labels.long()
        self.info = info

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index], self.labels[index]

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.as_tensor(indices, dtype=torch.long)
        return self.images[index], self.labels[index]


def channel_stats(images: torch.Tensor) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of ``uint8`` images scaled to ``[0, 1]``."""
    pixels = images.double().div(255).transpose(0, 1).reshape(images.shape[1], -1)
    return tuple(pixels.mean(1).tolist()), tuple(pixels.std(1).clamp_min(1e-3).tolist())
