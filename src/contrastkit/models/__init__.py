"""Backbones (CIFAR ResNet-18, ResNet-50, a small CNN for digits) and the projection head;
image-text two-tower models (a built-in one, and open_clip's towers behind the ``clip``
extra); sentence encoders (the built-in byte-level one, and open_clip's text towers)."""

from .encoder import BACKBONES, BackboneSpec, Encoder, build_encoder, projector
from .open_clip_towers import (
    OPEN_CLIP_CONFIGS,
    OpenClipText,
    OpenClipTwoTower,
    open_clip_model_names,
    open_clip_offline_model_names,
    open_clip_text_encoder,
    open_clip_two_tower,
    register_open_clip_configs,
)
from .resnet import cifar_resnet18, resnet50
from .sentence import SentenceEncoder, build_sentence_encoder
from .small_cnn import small_cnn, small_cnn_strided
from .sync_bn import GlobalBatchNorm, convert_to_global_batch_norm
from .text import ByteTokenizer, TextEncoder
from .two_tower import TOWERS, TwoTower, TwoTowerBase, build_two_tower

__all__ = [
    "BACKBONES",
    "OPEN_CLIP_CONFIGS",
    "TOWERS",
    "BackboneSpec",
    "ByteTokenizer",
    "Encoder",
    "GlobalBatchNorm",
    "OpenClipText",
    "OpenClipTwoTower",
    "SentenceEncoder",
    "TextEncoder",
    "TwoTower",
    "TwoTowerBase",
    "build_encoder",
    "build_sentence_encoder",
    "build_two_tower",
    "cifar_resnet18",
    "convert_to_global_batch_norm",
    "open_clip_model_names",
    "open_clip_offline_model_names",
    "open_clip_text_encoder",
    "open_clip_two_tower",
    "projector",
    "register_open_clip_configs",
    "resnet50",
    "small_cnn",
    "small_cnn_strided",
]
