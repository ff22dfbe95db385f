"""Small fake files of the datasets the paper tiers read (CIFAR-10/100, STL-10, an image
folder), in their real formats, for the one-step smoke runs and dry runs of those tiers."""

from __future__ import annotations

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
