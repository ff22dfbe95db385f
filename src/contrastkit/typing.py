"""The types that contrastkit's public signatures share, for annotations (``contrastkit.typing``
as ``numpy.typing``): what a function takes where it accepts any object of a kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

__all__ = ["Augment", "Embedder", "Samples"]

#: A model or function from a batch of inputs ``(B, ...)`` to their embeddings ``(B, d)``.
Embedder = Callable[[torch.Tensor], torch.Tensor]

#: ``augment(images, generator)``: a random augmentation of a batch of images ``(B, C, H, W)``,
#: drawing its random numbers from ``generator``.
Augment = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


class Samples(Protocol):
    """A map-style dataset: ``len(dataset)`` items, ``dataset[i]`` the ``i``-th (a torch
    ``Dataset`` that has a length, a list, ...)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...
