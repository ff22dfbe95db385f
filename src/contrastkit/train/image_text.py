"""The image-text task (``task=image_text``): an image tower and a text tower trained on
image-caption pairs, as CLIP (Radford et al., "Learning Transferable Visual Models From Natural
Language Supervision", ICML 2021, arXiv:2103.00020) and SigLIP (Zhai et al., "Sigmoid Loss for
Language Image Pre-Training", ICCV 2023, arXiv:2303.15343) train them.

A step embeds one augmented view of each image with the image tower and one of the image's
captions, drawn uniformly from the run's generator, with the text tower; the loss sees the pair
``(u, v) = (image embeddings, caption embeddings)``, row ``i`` of each the positive pair, so every
registered loss that takes two views applies (``info_nce`` is CLIP's, ``siglip`` SigLIP's;
``vrns=`` then acts on the cross-modal negatives). The captions are tokenized once, when the run
starts (:class:`TokenizedCaptions`).
"""

from __future__ import annotations

import warnings

import torch
from torch.utils.data import Dataset

#: The towers a step calls, in the order of the loss's two views.
TOWERS = ("image", "text")


class TokenizedCaptions(Dataset):
    """A captioned dataset (:class:`~contrastkit.data.CaptionedImages`) with every caption
    tokenized once by ``tokenizer`` (a callable ``list[str] -> LongTensor (n, L)``).

    Items are ``(image, label, tokens (K, L), count)``: the image's ``count`` captions in the
    first rows of ``tokens`` (``K`` is the most captions of any image; the rows past ``count``
    repeat the first caption and are never drawn). :meth:`__getitems__` returns a whole batch
    of each at once, as the image datasets do.
    """

    def __init__(self, dataset, tokenizer) -> None:
        captions = getattr(dataset, "captions", None)
        if captions is None:
            raise ValueError(f"task=image_text needs a captioned dataset (captioned_shapes, "
                             f"captions), but {type(dataset).__name__} has no captions")
        self.dataset = dataset
        self.info = dataset.info
        self.counts = torch.tensor([len(texts) for texts in captions])
        width = int(self.counts.max())
        texts = [text for texts in captions for text in texts]
        warn_truncated(texts, tokenizer, "captions")
        tokens = tokenizer(texts)
        starts = torch.cumsum(self.counts, 0) - self.counts
        slot = torch.arange(width).expand(len(captions), width)
        rows = starts[:, None] + torch.where(slot < self.counts[:, None], slot, 0)
        self.tokens = tokens[rows]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int):
        image, label = self.dataset[index]
        return image, label, self.tokens[index], self.counts[index]

    def __getitems__(self, indices: list[int]):
        images, labels = self.dataset.__getitems__(indices)
        index = torch.as_tensor(indices, dtype=torch.long)
        return images, labels, self.tokens[index], self.counts[index]


def warn_truncated(texts: list[str], tokenizer, what: str) -> None:
    """Warn when the built-in byte tokenizer cuts ``texts`` short (its ``context_length``
    holds the start and end tokens and ``context_length - 2`` bytes); ``what`` names the
    texts (``"captions"``)."""
    from contrastkit.models import ByteTokenizer

    if not isinstance(tokenizer, ByteTokenizer):
        return
    room = tokenizer.context_length - 2
    cut = sum(len(text.encode()) > room for text in texts)
    if cut:
        longest = max(len(text.encode()) for text in texts)
        warnings.warn(f"{cut} of {len(texts)} {what} are longer than context_length - 2 = "
                      f"{room} bytes and are cut short (the longest has {longest}); set "
                      f"context_length={longest + 2} to keep them whole", RuntimeWarning,
                      stacklevel=3)


def drawn_captions(tokens: torch.Tensor, counts: torch.Tensor, generator: torch.Generator,
                   global_batch: int, local: slice) -> torch.Tensor:
    """One caption ``(B, L)`` of each of this process's images (``tokens (B, K, L)`` and
    ``counts (B,)`` of :class:`TokenizedCaptions`), each drawn uniformly among the image's
    captions. The draws are those of the global batch's rows ``local``: one process sees the
    captions that any number of processes would together (the generator advances alike in
    every process)."""
    draws = torch.rand(global_batch, generator=generator, dtype=torch.float64)[local]
    counts = counts.cpu()
    choice = (draws * counts).long().clamp_max(counts - 1)
    return tokens[torch.arange(tokens.shape[0]), choice.to(tokens.device)]


def build_towers(config, info):
    """The run's two towers: ``config.clip_model`` from open_clip (its weights from the local
    file ``config.clip_checkpoint`` when set), else the built-in ones (``config.backbone`` with
    a linear projection to ``config.projector_out``, and a small transformer text tower), for
    images of ``info`` (a :class:`~contrastkit.data.DatasetInfo`)."""
    if config.clip_model:
        from contrastkit.models.open_clip_towers import open_clip_two_tower

        return open_clip_two_tower(config.clip_model, config.clip_checkpoint or None,
                                   setting="clip_checkpoint")
    from contrastkit.models.two_tower import build_two_tower

    return build_two_tower(config.backbone, info.channels, info.mean, info.std,
                           embed_dim=config.projector_out, context_length=config.context_length,
                           text_width=config.text_width, text_layers=config.text_layers)
