"""The text-pair task (``task=text_pairs``): one sentence encoder trained on (anchor, positive)
pairs with optional explicit negatives, as sentence-transformers trains with
``MultipleNegativesRankingLoss``, or on plain sentences with dropout as the only augmentation,
as unsupervised SimCSE does (Gao, Yao & Chen, "SimCSE: Simple Contrastive Learning of Sentence
Embeddings", EMNLP 2021, arXiv:2104.08821).

A step embeds the batch's anchors and positives (``text_mode=simcse``: each sentence twice, two
dropout masks) with the same encoder; the loss sees ``(u, v) = (anchors, positives)``, row ``i``
of each the positive pair, and the rows' negatives as explicit ones (``text_negatives=pool``:
every anchor meets every row's negatives, as sentence-transformers does; ``own``: each anchor
its own). The texts are tokenized once, when the run starts (:class:`TokenizedPairs`).

**Duplicates and classes, at the input.** A batch never holds two rows that share a text (an
anchor, a positive or a negative) or, when the rows have labels, a class
(:func:`~contrastkit.train.batches.distinct_batches`, over the texts' indices: nothing is
compared by embedding). So no anchor meets a copy of its own positive, or of itself, or a row
of its class among its negatives, whatever the loss.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from contrastkit.data.text_pairs import TextPairs
from contrastkit.models.text import ByteTokenizer

from .batches import epoch_batches
from .image_text import warn_truncated


class TokenizedPairs(Dataset):
    """The rows of ``pairs`` (a :class:`~contrastkit.data.text_pairs.TextPairs`) with every
    distinct text tokenized once by ``tokenizer`` (``list[str] -> LongTensor (n, L)``).

    With ``mode="simcse"`` the rows are the distinct texts of ``pairs``
    (:meth:`~contrastkit.data.text_pairs.TextPairs.sentences`), each its own positive.
    :meth:`__getitems__` returns a batch ``(anchors (B, L), labels (B,), positives (B, L))``,
    plus ``negatives (B, k, L)`` when the rows have ``k >= 1``; the built-in
    :class:`~contrastkit.models.ByteTokenizer`'s tokens are cut after the batch's longest text
    (:func:`trimmed`).
    """

    def __init__(self, pairs: TextPairs, tokenizer, mode: str = "pairs"):
        if not isinstance(pairs, TextPairs):
            raise ValueError(f"task=text_pairs needs a text-pair dataset (paraphrases, "
                             f"text_files), but {type(pairs).__name__} holds no text pairs")
        if mode == "pairs" and not pairs.paired:
            raise ValueError(f"{pairs.name} holds plain sentences, which have no positives: "
                             f"train on them with text_mode=simcse")
        self.pairs = pairs.sentences() if mode == "simcse" else pairs
        self.trim = isinstance(tokenizer, ByteTokenizer)
        warn_truncated(list(self.pairs.texts), tokenizer, "texts")
        self.tokens = tokenizer(list(self.pairs.texts))

    def __len__(self) -> int:
        return len(self.pairs)

    def row_keys(self) -> torch.Tensor:
        """What two rows of one batch must not share: each row's texts and, with labels, its
        class (offset past the texts' indices)."""
        keys = self.pairs.row_texts()
        if self.pairs.labeled:
            keys = torch.cat([keys, len(self.pairs.texts) + self.pairs.labels[:, None]], 1)
        return keys

    def __getitems__(self, indices: list[int]):
        rows = torch.as_tensor(indices, dtype=torch.long)
        pairs = self.pairs
        anchors = pairs.anchors[rows]
        positives = pairs.positives_or_anchors()[rows]  # SimCSE: its sentences, once more
        texts = [anchors, positives]
        if pairs.negatives.shape[1]:  # SimCSE's sentences have none
            texts.append(pairs.negatives[rows])
        tokens = [self.tokens[ids] for ids in texts]
        if self.trim:
            width = max(_content_width(batch) for batch in tokens)
            tokens = [batch[..., :width] for batch in tokens]
        return tokens[0], pairs.labels[rows], *tokens[1:]

    def __getitem__(self, index: int):
        anchors, labels, *others = self.__getitems__([index])
        return anchors[0], labels[0], *(other[0] for other in others)


def text_pair_inputs(config, pairs: TextPairs):
    """The sentence encoder of ``config`` and ``pairs`` tokenized for it
    (:class:`TokenizedPairs`)."""
    encoder = build_sentence_model(config)
    return encoder, TokenizedPairs(pairs, encoder.tokenizer, config.text_mode)


def check_text_pairs(config, dataset: TokenizedPairs) -> None:
    """A ``ValueError`` when ``config`` cannot train on ``dataset``: fewer rows than
    ``batch_size``, negatives that the loss does not take, ``text_negatives`` set for rows
    without negatives, a loss that takes labels (a class's rows as positives), or rows too
    alike for a single batch without a repeated text or class."""
    from contrastkit import losses

    pairs = dataset.pairs
    if len(dataset) < config.batch_size:
        raise ValueError(f"{pairs.name} has {len(dataset)} rows, fewer than batch_size="
                         f"{config.batch_size}; use a smaller batch_size")
    loss = losses.get(config.loss)
    if loss.uses_labels:
        raise ValueError(f"loss={config.loss} takes the rows of a class as positives, but "
                         f"task=text_pairs keeps them apart (a label column says which rows "
                         f"are never each other's negatives); choose a loss without labels")
    negatives = pairs.negatives.shape[1]
    if negatives and not loss.supports_negatives:
        takers = [name for name in losses.names() if losses.get(name).supports_negatives
                  and not losses.get(name).uses_labels]
        raise ValueError(f"{pairs.name} gives each row {negatives} negative(s), which "
                         f"loss={config.loss} does not take; choose a loss that does "
                         f"({', '.join(takers)}) or drop the negative columns")
    if not negatives and config.text_negatives != "pool":
        raise ValueError(f"text_negatives={config.text_negatives} would be ignored: "
                         f"{pairs.name} has no negative columns; remove the setting")
    if not epoch_batches(dataset, config.batch_size, config.seed, 0):
        kind = "text or class" if pairs.labeled else "text"
        raise ValueError(f"{pairs.name}: no batch of batch_size={config.batch_size} rows "
                         f"without a repeated {kind} can be formed (a batch never holds two "
                         f"rows that share one); use a smaller batch_size")


def build_sentence_model(config):
    """The run's sentence encoder: the text tower of the open_clip architecture
    ``config.clip_model`` (its weights from the local file ``config.clip_checkpoint`` when
    set), else the built-in byte-level transformer of ``context_length``, ``text_width``,
    ``text_layers`` and ``text_dropout``, projected linearly to ``projector_out``."""
    if config.clip_model:
        from contrastkit.models.open_clip_towers import open_clip_text_encoder

        return open_clip_text_encoder(config.clip_model, config.clip_checkpoint or None,
                                      setting="clip_checkpoint")
    from contrastkit.models.sentence import build_sentence_encoder

    return build_sentence_encoder(config.projector_out, config.context_length, config.text_width,
                                  config.text_layers, config.text_dropout)


def trimmed(tokens: torch.Tensor, tokenizer) -> torch.Tensor:
    """``tokens`` of the built-in :class:`~contrastkit.models.ByteTokenizer` without the
    columns after their longest text (padding alone): the causal text encoder pools at the
    end-of-text token, which never sees them, so the embeddings are the same, for less work;
    any other tokenizer's tokens as they are (open_clip's text towers take their full
    context)."""
    if not isinstance(tokenizer, ByteTokenizer):
        return tokens
    return tokens[..., :_content_width(tokens)]


def _content_width(tokens: torch.Tensor) -> int:
    """The longest row of byte tokens, without padding."""
    return int((tokens != ByteTokenizer.pad_id).sum(dim=-1).max())


def negative_embeddings(embedded: torch.Tensor, form: str) -> torch.Tensor:
    """The embeddings ``(B, k, d)`` of the rows' negatives as the loss takes them: each row's
    own (``form="own"``) or one pool ``(B k, d)`` (``"pool"``)."""
    return embedded.flatten(0, 1) if form == "pool" else embedded
