"""A small convolutional backbone for tiny images such as the 8x8 digits."""

from __future__ import annotations

from torch import nn


def _conv_block(in_channels: int, out_channels: int) -> list[nn.Module]:
    return [nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True)]


def small_cnn(in_channels: int = 1, width: int = 32) -> nn.Module:
    """Three 3x3 conv-BN-ReLU blocks (``width``, ``2 width``, ``4 width`` channels) with a 2x2
    max-pool after the second, then global average pooling: ``4 * width`` features (128 by
    default). About 0.1 M parameters."""
    return nn.Sequential(
        *_conv_block(in_channels, width),
        *_conv_block(width, 2 * width),
        nn.MaxPool2d(2),
        *_conv_block(2 * width, 4 * width),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )
