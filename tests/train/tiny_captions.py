"""A tiny captioned dataset (``tiny_shapes``: 64 training and 40 test images of captioned shapes),
a tiny image-text config and two tiny towers without BatchNorm for the tests; importing the
module registers the dataset (a spawned worker process imports it too)."""

from torch import nn

from contrastkit.data import DATASETS, load_captioned_shapes
from contrastkit.data.registry import _CAPTION_RECIPE, DatasetSpec
from contrastkit.models.two_tower import TwoTowerBase
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
                "device": "cpu", "progress": False, "log_every": 2}
    settings.update(changes)
    return load_config(overrides=[f"{key}={value}" for key, value in settings.items()])


class TinyTowers(TwoTowerBase):
    """Two towers without BatchNorm (so a chunked forward is the plain one), in float64."""

    def __init__(self):
        super().__init__()
        self.image = nn.Sequential(nn.Flatten(), nn.Linear(12, 6))
        self.embedding = nn.Embedding(10, 6)
        self.tokenizer = None

    def encode_image(self, images):
        return self.image(images)

    def encode_text(self, tokens):
        return self.embedding(tokens).mean(1)

    def image_features(self, images):
        return images.flatten(1)
