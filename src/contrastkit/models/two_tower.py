"""Image-text two-tower models (CLIP, SigLIP): an image tower and a text tower that embed
into one space.

Every two-tower model (:class:`TwoTower`, and open_clip's towers in
:mod:`contrastkit.models.open_clip_towers`) is a :class:`TwoTowerBase`:

- ``image_features(images)``: images float in [0, 1], ``(B, C, H, W)`` -> the image tower's
  features ``(B, F)`` before the projection (normalization inside); ``features`` is the same,
  so the linear probe, kNN and embedding read a two-tower model as they read an
  :class:`~contrastkit.models.Encoder`;
- ``encode_image(images)`` -> ``(B, embed_dim)`` and ``encode_text(tokens)`` -> ``(B,
  embed_dim)``: projected, not normalized (the losses normalize, and own the temperature,
  scale and bias);
- ``forward(inputs, tower="image")``: ``encode_image`` or, with ``tower="text"``,
  ``encode_text`` (a DDP-wrapped model is called as ``model(tokens, tower="text")``);
- ``tokenizer``: a callable ``list[str] -> LongTensor (B, L)``; ``embed_dim``; ``features_dim``
  (``F``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from .encoder import BACKBONES
from .text import byte_text_encoder

#: The towers :meth:`TwoTowerBase.forward` dispatches to.
TOWERS = ("image", "text")


class TwoTowerBase(nn.Module):
    """What every two-tower model shares: :meth:`features` and the :meth:`forward` dispatch.
    A subclass defines :meth:`image_features`, :meth:`encode_image`, :meth:`encode_text` and
    the attributes ``tokenizer``, ``embed_dim`` and ``features_dim``."""

    tokenizer: Callable[[Sequence[str]], torch.Tensor]
    embed_dim: int
    features_dim: int

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """The image features, as :meth:`Encoder.features <contrastkit.models.Encoder>`."""
        return self.image_features(images)

    def forward(self, inputs: torch.Tensor, tower: str = "image") -> torch.Tensor:
        """``encode_image(inputs)`` for ``tower="image"``, ``encode_text(inputs)`` for
        ``tower="text"``."""
        if tower == "image":
            return self.encode_image(inputs)
        if tower == "text":
            return self.encode_text(inputs)
        raise ValueError(f"tower must be one of {', '.join(map(repr, TOWERS))}, got {tower!r}")


class TwoTower(TwoTowerBase):
    """``images in [0, 1] -> normalize -> image backbone -> linear -> (B, embed_dim)`` and
    ``tokens -> text encoder -> linear -> (B, embed_dim)``.

    The projections are linear without bias, as CLIP's. ``image_backbone`` outputs
    ``image_features_dim`` features per image; ``text_encoder`` has a ``features_dim``
    attribute (:class:`~contrastkit.models.text.TextEncoder`); ``tokenizer`` turns texts into
    the tokens ``text_encoder`` reads.
    """

    mean: torch.Tensor  # buffers (1, C, 1, 1), registered in __init__
    std: torch.Tensor

    def __init__(self, image_backbone: nn.Module, image_features_dim: int,
                 text_encoder: nn.Module, tokenizer: Callable[[Sequence[str]], torch.Tensor],
                 mean: Sequence[float], std: Sequence[float], embed_dim: int = 128) -> None:
        super().__init__()
        for name, value in (("image_features_dim", image_features_dim),
                            ("embed_dim", embed_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if len(mean) != len(std):
            raise ValueError(f"mean and std must have one entry per channel each, got "
                             f"{len(mean)} and {len(std)}")
        self.backbone = image_backbone
        self.image_projection = nn.Linear(image_features_dim, embed_dim, bias=False)
        self.text = text_encoder
        # an int attribute, which torch types as a module's: Tensor | Module
        self.text_projection = nn.Linear(text_encoder.features_dim,  # type: ignore[arg-type]
                                         embed_dim, bias=False)
        self.tokenizer = tokenizer
        self.embed_dim = embed_dim
        self.features_dim = image_features_dim
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        return self.backbone((images - self.mean) / self.std)

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        return self.image_projection(self.image_features(images))

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.text_projection(self.text(tokens))


def build_two_tower(backbone: str, channels: int, mean: Sequence[float], std: Sequence[float],
                    embed_dim: int = 128,
                    context_length: int = 32, text_width: int = 128,
                    text_layers: int = 2) -> TwoTower:
    """A :class:`TwoTower`: image backbone ``backbone`` (a name in
    :data:`~contrastkit.models.BACKBONES`) on ``channels``-channel images normalized with
    ``mean`` and ``std``; text tower a :class:`~contrastkit.models.text.TextEncoder` of
    ``text_width`` and ``text_layers`` (``text_width // 32`` heads, at least one) over a
    :class:`~contrastkit.models.text.ByteTokenizer` of ``context_length``."""
    spec = BACKBONES.get(backbone)
    if len(mean) != channels or len(std) != channels:
        raise ValueError(f"mean and std must have channels={channels} entries each, got "
                         f"{len(mean)} and {len(std)}")
    tokenizer, text = byte_text_encoder(context_length, text_width, text_layers)
    return TwoTower(spec.build(channels), spec.features, text, tokenizer, mean, std,
                    embed_dim=embed_dim)
