"""A user's own dataset, encoder and augmentation, as the docs' example has them: Gaussian blobs
of 16-dimensional float vectors, an MLP, and additive noise drawn from the run's generator."""

import torch
from torch import nn
from torch.utils.data import Dataset


class Blobs(Dataset):
    """``size`` float vectors around ``classes`` seeded centres, with their class."""

    def __init__(self, size: int = 256, dim: int = 16, classes: int = 4, seed: int = 0,
                 labeled: bool = True):
        generator = torch.Generator().manual_seed(seed)
        centres = 3 * torch.randn(classes, dim, generator=generator)
        self.labels = torch.arange(size) % classes
        self.points = centres[self.labels] + torch.randn(size, dim, generator=generator)
        self.labeled = labeled

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, index: int):
        point = self.points[index]
        return (point, self.labels[index]) if self.labeled else point


def mlp(dim: int = 16, out: int = 8, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(dim, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, out))


def jitter(batch: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Additive Gaussian noise (sd 0.5), drawn on the CPU from the run's generator."""
    noise = torch.randn(batch.shape, generator=generator, dtype=batch.dtype)
    return batch + 0.5 * noise.to(batch.device)
