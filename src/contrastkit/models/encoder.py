"""Backbone + projection head, with the input normalization built in."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from contrastkit.registry import Registry

from .resnet import cifar_resnet18, resnet50
from .small_cnn import small_cnn, small_cnn_strided


class BackboneSpec(NamedTuple):
    """A backbone: ``build(in_channels)`` returns the module, which outputs ``features``
    features per image."""

    build: Callable[[int], nn.Module]
    features: int


#: The backbones by name; adding one is one entry:
#: ``BACKBONES.register("mine", BackboneSpec(build=my_net, features=256))``.
BACKBONES: Registry[BackboneSpec] = Registry("backbone")
BACKBONES.register("small_cnn", BackboneSpec(small_cnn, 128))
BACKBONES.register("small_cnn_strided", BackboneSpec(small_cnn_strided, 128))
BACKBONES.register("resnet18", BackboneSpec(cifar_resnet18, 512))
BACKBONES.register("resnet50", BackboneSpec(resnet50, 2048))


def projector(in_features: int, hidden: int = 512, out: int = 128) -> nn.Sequential:
    """The projection head of the paper's App. D: Linear - BatchNorm - ReLU - Linear."""
    return nn.Sequential(
        nn.Linear(in_features, hidden, bias=False),
        nn.BatchNorm1d(hidden),
        nn.ReLU(inplace=True),
        nn.Linear(hidden, out),
    )


class Encoder(nn.Module):
    """``images in [0, 1] -> normalize -> backbone -> features -> projector -> z``.

    :meth:`forward` returns the projector output ``z`` (what the loss sees); :meth:`features`
    returns the backbone output (what the linear probe and kNN see).
    """

    mean: torch.Tensor  # buffers (1, C, 1, 1), registered in __init__
    std: torch.Tensor

    def __init__(self, backbone: nn.Module, head: nn.Module,
                 mean: tuple[float, ...], std: tuple[float, ...]) -> None:
        super().__init__()
        self.backbone = backbone
        self.projector = head
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def features(self, images: torch.Tensor) -> torch.Tensor:
        return self.backbone((images - self.mean) / self.std)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.projector(self.features(images))


def build_encoder(backbone: str, channels: int, mean: tuple[float, ...], std: tuple[float, ...],
                  projector_hidden: int = 512, projector_out: int = 128) -> Encoder:
    """An :class:`Encoder` with backbone ``backbone`` (a name in :data:`BACKBONES`)."""
    spec = BACKBONES.get(backbone)
    return Encoder(spec.build(channels), projector(spec.features, projector_hidden,
                                                   projector_out), mean, std)
