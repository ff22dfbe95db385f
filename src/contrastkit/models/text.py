"""A byte-level tokenizer and a small causal transformer text encoder (CLIP's text tower,
small), for image-text training without any download."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from contrastkit.checks.scalars import check_probability_below_one


class ByteTokenizer:
    """Texts to token ids: the UTF-8 bytes of each text, between a start-of-text and an
    end-of-text token, padded to ``context_length``.

    Ids: ``pad_id = 0``, ``sot_id = 1``, ``eot_id = 2``, byte ``b`` is ``b + 3``;
    ``vocab_size = 259``. A text longer than ``context_length - 2`` bytes is truncated and
    still ends with the end-of-text token, so the end-of-text token is always the last
    token of a row's content (where :class:`TextEncoder` pools). Needs no vocabulary file.
    """

    pad_id = 0
    sot_id = 1
    eot_id = 2
    vocab_size = 256 + 3

    def __init__(self, context_length: int = 32) -> None:
        if isinstance(context_length, bool) or not isinstance(context_length, int) \
                or context_length < 2:
            raise ValueError("context_length must be an integer >= 2 (room for the start and "
                             f"end tokens), got {context_length!r}")
        self.context_length = context_length

    def __call__(self, texts: Sequence[str] | str) -> torch.Tensor:
        """A LongTensor of shape ``(len(texts), context_length)``; a single string is one
        text (as open_clip's tokenizers take it)."""
        if isinstance(texts, str):
            texts = [texts]
        tokens = torch.full((len(texts), self.context_length), self.pad_id, dtype=torch.long)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"texts must be strings, got {type(text).__name__} "
                                 f"{text!r} at index {row}")
            content = [byte + 3 for byte in text.encode("utf-8")[:self.context_length - 2]]
            ids = [self.sot_id, *content, self.eot_id]
            tokens[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
        return tokens

    def __repr__(self) -> str:
        return f"ByteTokenizer(context_length={self.context_length})"


class TextEncoder(nn.Module):
    """Token ids ``(B, L)`` -> text features ``(B, width)``, as CLIP's text tower.

    Token embedding plus a learned positional embedding, a pre-norm transformer with a causal
    mask (each token sees itself and the tokens before it), a final LayerNorm, and the
    features at the (first) end-of-text token ``eot_id``. The causal mask is what handles
    padding: whatever follows the end-of-text token, padding included, is never seen by the
    pooled features. ``eot_id`` is :class:`ByteTokenizer`'s by default; open_clip's
    ``SimpleTokenizer`` fits with ``eot_id=49407``. A row without ``eot_id`` is a
    ``ValueError``. ``dropout`` (default 0, CLIP's) is the transformer layers' dropout, on the
    attention weights, the feed-forward activations and each residual branch, in training
    mode only: the augmentation of SimCSE (Gao, Yao & Chen, "SimCSE: Simple Contrastive
    Learning of Sentence Embeddings", EMNLP 2021, arXiv:2104.08821), whose two passes of one
    sentence differ by their dropout masks alone.
    """

    causal_mask: torch.Tensor  # a buffer, registered in __init__

    def __init__(self, vocab_size: int, context_length: int, width: int = 128,
                 layers: int = 2, heads: int = 4, eot_id: int = ByteTokenizer.eot_id,
                 dropout: float = 0.0) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("context_length", context_length),
                            ("width", width), ("layers", layers), ("heads", heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if width % heads:
            raise ValueError(f"width must be a multiple of heads, got width={width}, "
                             f"heads={heads}")
        self.vocab_size = vocab_size
        self.context_length = context_length
        if isinstance(eot_id, bool) or not isinstance(eot_id, int) \
                or not 0 <= eot_id < vocab_size:
            raise ValueError(f"eot_id must be a token id in [0, vocab_size={vocab_size}), "
                             f"got {eot_id!r}")
        self.eot_id = eot_id
        dropout = check_probability_below_one("dropout", dropout, "a dropout probability")
        self.features_dim = width
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(context_length, width))
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=4 * width,
                                           dropout=dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        self.register_buffer("causal_mask", torch.ones(context_length, context_length,
                                                       dtype=torch.bool).triu(1),
                             persistent=False)
        nn.init.normal_(self.token_embedding.weight, std=0.02)  # CLIP's initialization
        nn.init.normal_(self.positional_embedding, std=0.01)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.ndim != 2 or tokens.dtype != torch.long:
            raise ValueError("tokens must be a LongTensor of shape (batch, length), got "
                             f"{tokens.dtype} of shape {tuple(tokens.shape)}")
        length = tokens.shape[1]
        if not 1 <= length <= self.context_length:
            raise ValueError(f"tokens must have 1 to context_length={self.context_length} "
                             f"columns, got {length}")
        is_eot = tokens == self.eot_id
        if not bool(is_eot.any(dim=1).all()):
            raise ValueError(f"every row of tokens must hold the end-of-text token "
                             f"eot_id={self.eot_id}; some rows have none")
        first_eot = is_eot.int().argmax(dim=1)
        x = self.token_embedding(tokens) + self.positional_embedding[:length]
        x = self.transformer(x, mask=self.causal_mask[:length, :length], is_causal=True)
        return self.ln_final(x[torch.arange(x.shape[0], device=x.device), first_eot])


def byte_text_encoder(context_length: int = 32, text_width: int = 128, text_layers: int = 2,
                      dropout: float = 0.0) -> tuple[ByteTokenizer, TextEncoder]:
    """A :class:`ByteTokenizer` of ``context_length`` and a :class:`TextEncoder` over it, of
    width ``text_width`` and ``text_layers`` layers, with ``text_width // 32`` heads (at least
    one, dividing ``text_width``) and ``dropout``."""
    if isinstance(text_width, bool) or not isinstance(text_width, int) or text_width < 1:
        raise ValueError(f"text_width must be a positive integer, got {text_width!r}")
    tokenizer = ByteTokenizer(context_length)
    heads = max(1, text_width // 32)
    while text_width % heads:
        heads -= 1
    return tokenizer, TextEncoder(tokenizer.vocab_size, context_length, width=text_width,
                                  layers=text_layers, heads=heads, eot_id=tokenizer.eot_id,
                                  dropout=dropout)
