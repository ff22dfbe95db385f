"""Small convolutional backbones for tiny images: the 8x8 digits and 28x28 MNIST."""

from __future__ import annotations

from torch import nn


def _conv_block(in_channels: int, out_channels: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True)]


def small_cnn(in_channels: int = 1, width: int = 32, first_stride: int = 1) -> nn.Module:
    """Three 3x3 conv-BN-ReLU blocks (``width``, ``2 width``, ``4 width`` channels) with a 2x2
    max-pool after the second, then global average pooling: ``4 * width`` features (128 by
    default). About 0.1 M parameters. ``first_stride=2`` makes the first convolution strided,
    so the two costly convolutions run at a quarter of the pixels (``small_cnn_strided``)."""
    return nn.Sequential(
        *_conv_block(in_channels, width, first_stride),
        *_conv_block(width, 2 * width),
        nn.MaxPool2d(2),
        *_conv_block(2 * width, 4 * width),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def small_cnn_strided(in_channels: int = 1) -> nn.Module:
    """:func:`small_cnn` with a stride-2 first convolution: for 28x28 images (MNIST-5k), the
    second and third convolutions run at 14x14 and 7x7 instead of 28x28 and 14x14, about 7 M
    multiply-adds per image instead of 29 M, at the same parameters. Measured on MNIST-5k
    (docs/benchmarks.md, "backbone"): about 4x the images per second of :func:`small_cnn` at
    an equal or better converged linear accuracy."""
    return small_cnn(in_channels, first_stride=2)
