"""Sentence encoders for ``task=text_pairs``: token ids ``(B, L)`` to embeddings ``(B, d)``, one
encoder for the anchors, positives and negatives alike (a bi-encoder, as sentence-transformers
trains).

Every sentence encoder has ``forward(tokens)`` (the embeddings the loss sees: projected, not
normalized), ``features(tokens)`` (the pooled text features before the projection),
``tokenizer`` (``list[str] -> LongTensor (B, L)``), ``embed_dim`` and ``features_dim``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from .text import byte_text_encoder


class SentenceEncoder(nn.Module):
    """``tokens -> text encoder -> linear (no bias) -> (B, embed_dim)``; ``text_encoder`` has
    a ``features_dim`` attribute (:class:`~contrastkit.models.text.TextEncoder`) and reads the
    tokens that ``tokenizer`` makes."""

    def __init__(self, text_encoder: nn.Module,
                 tokenizer: Callable[[Sequence[str]], torch.Tensor], embed_dim: int = 128
                 ) -> None:
        super().__init__()
        if isinstance(embed_dim, bool) or not isinstance(embed_dim, int) or embed_dim < 1:
            raise ValueError(f"embed_dim must be a positive integer, got {embed_dim!r}")
        self.text = text_encoder
        # an int attribute, which torch types as a module's: Tensor | Module
        self.features_dim: int = text_encoder.features_dim  # type: ignore[assignment]
        self.projection = nn.Linear(self.features_dim, embed_dim, bias=False)
        self.tokenizer = tokenizer
        self.embed_dim = embed_dim

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        """The text encoder's pooled features ``(B, features_dim)``."""
        return self.text(tokens)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.projection(self.text(tokens))


def build_sentence_encoder(embed_dim: int = 128, context_length: int = 96,
                           text_width: int = 64, text_layers: int = 2,
                           dropout: float = 0.0) -> SentenceEncoder:
    """A :class:`SentenceEncoder`: the byte-level text encoder of ``context_length``,
    ``text_width``, ``text_layers`` and ``dropout``
    (:func:`~contrastkit.models.text.byte_text_encoder`) and a linear projection to
    ``embed_dim``."""
    tokenizer, text = byte_text_encoder(context_length, text_width, text_layers, dropout)
    return SentenceEncoder(text, tokenizer, embed_dim)
