"""One entry point to every dataset: :func:`load_dataset` by name and split."""

from __future__ import annotations

from pathlib import Path

from .digits import load_digits
from .vision import load_cifar, load_imagefolder, load_stl10

DATASETS = ("digits", "cifar10", "cifar100", "stl10", "imagefolder")

#: The split each dataset is pretrained on (STL-10 adds its 100 000 unlabeled images).
PRETRAIN_SPLIT = {"stl10": "train+unlabeled"}


def load_dataset(name: str, split: str, root: str | Path = "data", download: bool = False):
    """The ``split`` of dataset ``name``: a dataset of ``(uint8 image (C, H, W), label)`` with
    an ``info`` attribute (:class:`~contrastkit.data.images.DatasetInfo`).

    ``root`` is where the files live (unused for ``digits``, which ships with scikit-learn);
    for ``imagefolder`` it holds ``train/`` and ``val/``. ``download`` lets torchvision fetch
    CIFAR or STL-10.
    """
    if name == "digits":
        return load_digits(split)
    if name in ("cifar10", "cifar100"):
        return load_cifar(name, root, split, download)
    if name == "stl10":
        return load_stl10(root, split, download)
    if name == "imagefolder":
        return load_imagefolder(root, split)
    raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; got {name!r}")


def pretrain_split(name: str) -> str:
    return PRETRAIN_SPLIT.get(name, "train")
