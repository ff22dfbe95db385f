"""CIFAR-10/100, STL-10 and ImageFolder (ImageNet-100) through torchvision's dataset classes.

The loaders read the archives in their published on-disk format. With ``download=True``,
torchvision fetches the archive and checks its MD5; without it, a missing dataset raises
:class:`DatasetUnavailableError` saying where the files should be and how to get them. An
archive that is present but not yet extracted (``cifar-10-python.tar.gz`` in ``root``) is
extracted here. A failed download, an archive that is not a readable ``.tar.gz`` and extracted
files that do not parse raise the same error, naming the file and, for the download, the URL
and the folder to put the archive in by hand.

Per-file checksums are not re-checked at every load (only the archive's, at download), so the
loaders also read archives in the same format built elsewhere, as the tests do.
"""

from __future__ import annotations

import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .images import DatasetInfo, ImageTensorDataset

# Published per-channel statistics of the training sets (pixel values in [0, 1]).
CIFAR10_STATS = ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
CIFAR100_STATS = ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))
STL10_STATS = ((0.4467, 0.4398, 0.4066), (0.2603, 0.2566, 0.2713))
IMAGENET_STATS = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def _without_file_checksums(cls: Any) -> type:
    """A subclass of a torchvision dataset class whose per-file MD5s are ``None``
    (existence checks only); the archive's MD5 is still checked on download."""
    attributes: dict[str, object] = {
        "train_list": [[name, None] for name, _ in cls.train_list],
        "test_list": [[name, None] for name, _ in cls.test_list],
    }
    if isinstance(getattr(cls, "meta", None), dict):
        attributes["meta"] = {**cls.meta, "md5": None}
    return type(cls.__name__, (cls,), attributes)


class DatasetUnavailableError(FileNotFoundError, ValueError):
    """A dataset that is missing, cannot be downloaded, or whose files do not parse. The
    message says which file or URL and what to do. It is a ``FileNotFoundError`` (the data is
    not there in usable form) and a ``ValueError`` (bad input: the command line prints its
    message without a traceback)."""


def _missing(name: str, root: Path, expected: str, how: str) -> DatasetUnavailableError:
    return DatasetUnavailableError(
        f"{name} not found: expected {expected} under {root.resolve()}. {how}"
    )


def _download(name: str, base: Any, root: Path) -> None:
    """Fetch ``base``'s archive into ``root`` (checking its MD5) unless its folder or archive
    is already there; a failure names the URL and where to put the archive by hand, and
    leaves neither a partial archive nor a folder created for it."""
    from torchvision.datasets.utils import download_url

    if (root / base.base_folder).is_dir() or (root / base.filename).is_file():
        return
    created = not root.exists()
    try:
        download_url(base.url, str(root), filename=base.filename, md5=base.tgz_md5)
    except (OSError, RuntimeError) as error:  # URLError is an OSError; a bad MD5 a RuntimeError
        (root / base.filename).unlink(missing_ok=True)
        if created and root.is_dir() and not any(root.iterdir()):
            root.rmdir()
        raise DatasetUnavailableError(
            f"{name}: download of {base.url} failed ({error}). Without network access, fetch "
            f"that file elsewhere and put it, named {base.filename}, in {root.resolve()}/; "
            f"it is extracted on first use (then download=true is not needed)."
        ) from error


def _extract_if_archived(name: str, base: Any, root: Path) -> None:
    """Extract ``base``'s archive in ``root`` if its folder is missing, through a temporary
    folder so that a broken archive leaves no partial folder behind."""
    from torchvision.datasets.utils import extract_archive

    archive, folder = base.filename, base.base_folder
    if (root / folder).is_dir() or not (root / archive).is_file():
        return
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=root))
    try:
        extract_archive(str(root / archive), str(staging))
        if not (staging / folder).is_dir():
            raise tarfile.TarError(f"it holds no {folder}/ folder")
        (staging / folder).rename(root / folder)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise DatasetUnavailableError(
            f"{name}: {root.resolve() / archive} is not a readable {name} archive ({error}); "
            f"delete it and download it again ({base.url})."
        ) from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _read_torchvision(name: str, folder: Path, make: Callable[[], Any]) -> Any:
    """``make()`` (a torchvision dataset reading ``folder``), with unreadable files reported as
    :class:`DatasetUnavailableError` naming the folder."""
    import pickle

    try:
        return make()
    except (RuntimeError, OSError, EOFError, ValueError, KeyError, pickle.UnpicklingError) as error:
        raise DatasetUnavailableError(
            f"{name}: the files in {folder.resolve()} are not a readable {name} dataset "
            f"({type(error).__name__}: {error}); delete the folder and its archive and "
            f"download it again."
        ) from error


def _fetch(name: str, base: Any, root: Path, download: bool, how: str) -> None:
    """Make ``root/base.base_folder`` exist: download (if asked) and extract the archive, or
    raise :class:`DatasetUnavailableError` saying where it is expected and ``how`` to get it."""
    if download:
        _download(name, base, root)
    _extract_if_archived(name, base, root)
    if not (root / base.base_folder).is_dir():
        raise _missing(name, root, f"{base.base_folder}/ or {base.filename}", how)


def load_cifar(name: str, root: str | Path, split: str, download: bool = False
               ) -> ImageTensorDataset:
    """CIFAR-10 (``name="cifar10"``) or CIFAR-100 (``"cifar100"``), ``split`` ``"train"``
    (50 000 images) or ``"test"`` (10 000), as an :class:`ImageTensorDataset`."""
    from torchvision import datasets

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' for {name}, got {split!r}")
    base = {"cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100}[name]
    root = Path(root)
    _fetch(name, base, root, download,
           f"Download {base.url} into that folder, or pass download=true "
           f"(contrastkit pretrain dataset={name} download=true "
           f"{shlex.quote(f'data_dir={root}')}).")
    dataset = _read_torchvision(
        name, root / base.base_folder,
        lambda: _without_file_checksums(base)(str(root), train=split == "train"),
    )
    images = torch.from_numpy(np.ascontiguousarray(dataset.data)).permute(0, 3, 1, 2)
    stats = CIFAR10_STATS if name == "cifar10" else CIFAR100_STATS
    info = DatasetInfo(name, 3, 32, len(dataset.classes), *stats)
    return ImageTensorDataset(images.contiguous(), torch.as_tensor(dataset.targets), info)


def load_stl10(root: str | Path, split: str, download: bool = False) -> ImageTensorDataset:
    """STL-10 at 96x96: ``split`` ``"train"`` (5 000 labeled), ``"test"`` (8 000),
    ``"unlabeled"`` (100 000, label -1) or ``"train+unlabeled"`` (for pretraining)."""
    from torchvision import datasets

    splits = ("train", "test", "unlabeled", "train+unlabeled")
    if split not in splits:
        raise ValueError(f"split must be one of {splits} for stl10, got {split!r}")
    base = datasets.STL10
    root = Path(root)
    _fetch("stl10", base, root, download,
           f"Download {base.url} into that folder, or pass download=true.")
    dataset = _read_torchvision(
        "stl10", root / base.base_folder,
        lambda: _without_file_checksums(base)(str(root), split=split),
    )
    labels = torch.as_tensor(dataset.labels).long()
    info = DatasetInfo("stl10", 3, 96, 10, *STL10_STATS)
    return ImageTensorDataset(torch.from_numpy(dataset.data).contiguous(), labels, info)


class ResizedImageFolder(torch.utils.data.Dataset):
    """An ImageFolder (``root/<class>/<image>``) decoded lazily and resized to a square
    ``uint8`` tensor: shorter side to ``resize``, then the central ``image_size`` crop.

    Use it with ``DataLoader(num_workers=...)``; augmentation then runs on whole batches.
    """

    def __init__(self, root: str | Path, image_size: int = 224, resize: int = 256) -> None:
        from torchvision import datasets, transforms

        root = Path(root)
        if not root.is_dir():
            raise _missing(
                "imagefolder", root.parent, f"{root.name}/<class>/<image files>",
                "Arrange the images as one folder per class (e.g. ImageNet-100's train/ and "
                "val/) and set data_dir to the folder that holds train/ and val/.",
            )
        transform = transforms.Compose([
            transforms.Resize(resize), transforms.CenterCrop(image_size),
            transforms.PILToTensor(),
        ])
        self.folder = datasets.ImageFolder(str(root), transform=transform)
        self.labels = torch.as_tensor(self.folder.targets)
        self.info = DatasetInfo("imagefolder", 3, image_size, len(self.folder.classes),
                                *IMAGENET_STATS)

    def __len__(self) -> int:
        return len(self.folder)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image, label = self.folder[index]
        if image.shape[0] == 1:
            image = image.expand(3, -1, -1)
        return image.contiguous(), torch.tensor(label)


def load_imagefolder(root: str | Path, split: str, image_size: int = 224
                     ) -> ResizedImageFolder:
    """``root/<split>/<class>/<image>`` (``split`` ``"train"`` or ``"val"``/``"test"``)."""
    root = Path(root)
    folder = root / split
    if split == "test" and not folder.is_dir():
        folder = root / "val"
    return ResizedImageFolder(folder, image_size=image_size, resize=round(image_size * 8 / 7))
