"""Images with captions, for image–text (CLIP/SigLIP) training.

A :class:`CaptionedImages` is an :class:`~contrastkit.data.images.ImageTensorDataset` (items
``(image, label)``, batches through ``__getitems__``), so the image-only machinery (probes,
kNN, embedding) reads it unchanged, plus what the text side needs: one or more captions per
image, the class names and the prompt templates of zero-shot classification.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .images import DatasetInfo, ImageTensorDataset


class CaptionedImages(ImageTensorDataset):
    """``uint8`` images ``(N, C, H, W)`` with captions, labels and zero-shot prompts.

    Attributes:
        images: ``uint8`` tensor ``(N, C, H, W)``.
        captions: one tuple of one or more non-empty strings per image.
        labels: ``long`` tensor ``(N,)``, in ``[0, len(class_names))``, or ``-1`` for an image
            without a label.
        class_names: the name of each class (``"red circle"``), or ``()`` when there are no
            classes; ``info.num_classes`` is their number.
        prompts: zero-shot prompt templates, each with exactly one ``"{}"`` where a class
            name goes (``"a photo of a {}."``), or ``()``.
        info: :class:`~contrastkit.data.images.DatasetInfo`.
    """

    def __init__(self, images: torch.Tensor, captions: Sequence[Sequence[str]],
                 labels: torch.Tensor, info: DatasetInfo, class_names: Sequence[str] = (),
                 prompts: Sequence[str] = ()) -> None:
        super().__init__(images, labels, info)
        self.captions = _check_captions(captions, len(self))
        self.class_names = _check_strings("class_names", class_names)
        if len(set(self.class_names)) != len(self.class_names):
            raise ValueError(f"class_names must be distinct, got {list(self.class_names)}")
        if self.class_names and info.num_classes != len(self.class_names):
            raise ValueError(f"info.num_classes must equal len(class_names) = "
                             f"{len(self.class_names)}, got {info.num_classes}")
        if len(self) and int(self.labels.min()) < -1:
            raise ValueError(f"labels must be -1 (no label) or a class index, got "
                             f"{int(self.labels.min())}")
        if len(self) and int(self.labels.max()) >= len(self.class_names):
            raise ValueError(f"labels must lie in [-1, len(class_names)) = "
                             f"[-1, {len(self.class_names)}), got {int(self.labels.max())}")
        self.prompts = _check_strings("prompts", prompts)
        for prompt in self.prompts:
            if prompt.count("{}") != 1:
                raise ValueError(f'each prompt must contain "{{}}" exactly once (where the class '
                                 f"name goes), got {prompt!r}")


def _check_strings(name: str, values: Sequence[str]) -> tuple[str, ...]:
    """``values`` as a tuple of non-empty strings; a ``ValueError`` naming ``name`` otherwise."""
    if isinstance(values, str):
        raise ValueError(f"{name} must be a sequence of strings, not one string: {values!r}")
    values = tuple(values)
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must hold non-empty strings, got {value!r}")
    return values


def _check_captions(captions: Sequence[Sequence[str]], count: int) -> tuple[tuple[str, ...], ...]:
    """``captions`` as a tuple of ``count`` tuples of one or more non-empty strings."""
    if isinstance(captions, str):
        raise ValueError(f"captions must hold one sequence of strings per image, got one "
                         f"string: {captions!r}")
    captions = tuple(captions)
    if len(captions) != count:
        raise ValueError(f"captions must hold one entry per image ({count}), got {len(captions)}")
    checked = []
    for index, texts in enumerate(captions):
        if isinstance(texts, str):
            raise ValueError(f"captions[{index}] must be a sequence of strings (one or more "
                             f"captions), got one string: {texts!r}")
        texts = tuple(texts)
        if not texts:
            raise ValueError(f"captions[{index}] must hold at least one caption, got none")
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"captions[{index}] must hold non-empty strings, got {text!r}")
        checked.append(texts)
    return tuple(checked)
