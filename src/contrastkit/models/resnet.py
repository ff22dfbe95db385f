"""ResNet backbones from torchvision, returning pooled features (the classifier removed)."""

from __future__ import annotations

from torch import nn


def cifar_resnet18(in_channels: int = 3) -> nn.Module:
    """ResNet-18 for 32x32 images (paper App. D): the stem is a 3x3 convolution with stride 1
    and padding 1 and there is no max-pool, so the first stage sees the full 32x32 image.
    Outputs 512 features."""
    from torchvision.models import resnet18

    model = resnet18(weights=None)
    model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    model.fc = nn.Identity()
    return model


def resnet50(in_channels: int = 3) -> nn.Module:
    """torchvision's ResNet-50 (7x7 stride-2 stem, max-pool) for ImageNet-sized images.
    Outputs 2048 features."""
    from torchvision.models import resnet50 as torchvision_resnet50

    model = torchvision_resnet50(weights=None)
    if in_channels != 3:
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
    model.fc = nn.Identity()
    return model
