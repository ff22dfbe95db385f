"""A tiny captioned dataset (``tiny_shapes``: 64 training and 40 test images of captioned shapes)
and a tiny image-text config for the tests; importing the module registers the dataset (a
spawned worker process imports it too)."""

from contrastkit.data import DATASETS, load_captioned_shapes
from contrastkit.data.registry import _CAPTION_RECIPE, DatasetSpec
from contrastkit.train import load_config

TINY = "tiny_shapes"
SIZES = {"train": 64, "test": 40}


def load_tiny_shapes(root, split: str, download: bool):
    return load_captioned_shapes(split, count=SIZES[split])


DATASETS.register(TINY, DatasetSpec(load=load_tiny_shapes, augmentation=_CAPTION_RECIPE))


def tiny_image_text_config(tmp_path, **changes):
    """``task=image_text`` on ``tiny_shapes`` with narrow towers, on the CPU."""
    settings = {"task": "image_text", "runs_dir": str(tmp_path), "name": "tiny",
                "dataset": TINY, "batch_size": 16, "epochs": 2, "warmup_epochs": 1,
                "projector_out": 16, "text_width": 32, "text_layers": 1,
                "context_length": 48, "device": "cpu", "progress": False, "log_every": 2}
    settings.update(changes)
    return load_config(overrides=[f"{key}={value}" for key, value in settings.items()])
