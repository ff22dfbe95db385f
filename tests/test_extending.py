"""Extending contrastkit from outside the package: a loss, a dataset and a backbone are each one
registration, and then work end to end (config, pretrain, evaluate, simulate) by name."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit import losses
from contrastkit.data import DATASETS, DatasetSpec
from contrastkit.data.images import DatasetInfo, ImageTensorDataset
from contrastkit.losses.registry import LOSSES
from contrastkit.models import BACKBONES, BackboneSpec


@pytest.fixture
def scratch_registries(monkeypatch):
    """Copies of the registries for the test, so registrations do not leak into others."""
    for registry in (LOSSES, DATASETS, BACKBONES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


def _stripes(root, split, download):
    """Two classes of 6x6 images: a bright row or a bright column at a random place."""
    generator = torch.Generator().manual_seed(0 if split == "train" else 1)
    count = 256 if split == "train" else 64
    labels = torch.arange(count) % 2
    where = torch.randint(0, 6, (count,), generator=generator)
    images = torch.randint(0, 60, (count, 1, 6, 6), generator=generator, dtype=torch.uint8)
    for i in range(count):
        if labels[i]:
            images[i, 0, :, where[i]] = 255
        else:
            images[i, 0, where[i], :] = 255
    info = DatasetInfo("stripes", channels=1, image_size=6, num_classes=2, mean=(0.3,),
                       std=(0.3,))
    return ImageTensorDataset(images, labels, info)


def test_a_loss_a_dataset_and_a_backbone_registered_outside_work_end_to_end(
        scratch_registries, tmp_path):
    from contrastkit.evaluate import evaluate_run
    from contrastkit.simulate import optimize_embeddings
    from contrastkit.train import load_config, pretrain

    @losses.register("mine")
    class Mine(losses.ContrastiveLoss):
        hyperparameters = ("temperature",)

        def __init__(self, temperature=0.1):
            super().__init__()
            self.temperature = temperature

        def forward(self, u, v, labels=None):
            return losses.info_nce(u, v, temperature=self.temperature)

    DATASETS.register("stripes", DatasetSpec(load=_stripes, augmentation={"flip_p": 0.0}))
    BACKBONES.register("tiny_mlp", BackboneSpec(
        build=lambda channels: nn.Sequential(nn.Flatten(), nn.Linear(channels * 36, 32)),
        features=32))

    config = load_config(None, [
        "loss=mine", "temperature=0.3", "dataset=stripes", "backbone=tiny_mlp", "vrns=0",
        "epochs=2", "warmup_epochs=0", "batch_size=64", "projector_hidden=16",
        "projector_out=8", "device=cpu", "progress=false", f"runs_dir={tmp_path}", "name=ext"])
    result = pretrain(config)
    assert [m["mine"] for m in result.history] == [m["loss"] for m in result.history]
    assert all(m["loss"] > 0 for m in result.history)
    results = evaluate_run(result.run_dir, knn_k=5, pairs=64)
    assert 0 <= results["linear_top1"] <= 100 and results["pairs"] == 64

    with pytest.raises(ValueError, match="siglip_scale=5.0 would be ignored: loss=mine"):
        load_config(None, ["loss=mine", "siglip_scale=5"])
    simulated = optimize_embeddings(losses.build("mine", {"temperature": 0.5}), 4, 3,
                                    steps=50, lr=0.1, seed=0)
    assert simulated.history[-1]["loss"] < simulated.history[0]["loss"]


def test_registries_refuse_a_second_entry_under_a_taken_name(scratch_registries):
    with pytest.raises(ValueError, match="dataset named 'digits' is already registered"):
        DATASETS.register("digits", DatasetSpec(load=_stripes))
    with pytest.raises(ValueError, match="backbone must be one of .*resnet18.*got 'vgg'"):
        BACKBONES.get("vgg")
    with pytest.raises(ValueError, match="identifier"):
        DATASETS.register("my data", DatasetSpec(load=_stripes))
