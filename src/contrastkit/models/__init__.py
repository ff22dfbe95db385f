"""Backbones (CIFAR ResNet-18, ResNet-50, a small CNN for digits) and the projection head."""

from .encoder import BACKBONES, BackboneSpec, Encoder, build_encoder, projector
from .resnet import cifar_resnet18, resnet50
from .small_cnn import small_cnn, small_cnn_strided
from .sync_bn import GlobalBatchNorm, convert_to_global_batch_norm

__all__ = [
    "BACKBONES",
    "BackboneSpec",
    "Encoder",
    "GlobalBatchNorm",
    "build_encoder",
    "cifar_resnet18",
    "convert_to_global_batch_norm",
    "projector",
    "resnet50",
    "small_cnn",
    "small_cnn_strided",
]
