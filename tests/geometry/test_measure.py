"""measure / measure_embeddings / SimilarityMonitor with a toy encoder, dataset and augment."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit import geometry


class ToyImages(torch.utils.data.Dataset):
    """``count`` random 1x4x4 images with labels ``i % 3``."""

    def __init__(self, count=40, labelled=True, seed=0):
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(count, 1, 4, 4, generator=generator)
        self.labelled = labelled

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        return (image, index % 3) if self.labelled else image


def noisy(images, generator):
    """Augmentation: additive Gaussian noise drawn from the given generator, on the CPU (where
    ``measure`` promises the generator lives), added on the images' device."""
    noise = torch.randn(images.shape, generator=generator).to(images.device)
    return images + 0.3 * noise


def identity(images, generator):
    return images


def toy_encoder(seed=0):
    torch.manual_seed(seed)  # nn.Linear initializes from the global generator
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.BatchNorm1d(8), nn.Linear(8, 5))


def test_identity_augmentation_gives_aligned_pairs_and_the_encoder_stats():
    dataset, encoder = ToyImages(), toy_encoder()
    result = geometry.measure(encoder, dataset, identity, n_pairs=25, seed=3, batch_size=7)
    assert result.stats.positive_mean == pytest.approx(1.0, abs=1e-6)
    assert result.stats.positive_var == pytest.approx(0.0, abs=1e-6)
    assert result.stats.negative_count == 25 * 24 and result.n_pairs == 25
    # the measured pairs are the 25 images chosen by the seed, embedded in eval mode
    indices = torch.randperm(40, generator=torch.Generator().manual_seed(3))[:25]
    with torch.no_grad():
        embeddings = encoder.eval()(dataset.images[indices])
    expected = geometry.similarity_stats(embeddings, embeddings, indices % 3)
    for key, value in expected.as_dict().items():
        got = result.stats.as_dict()[key]
        assert got == value if isinstance(value, int) else got == pytest.approx(value, abs=1e-6)
    assert result.alignment == pytest.approx(0.0, abs=1e-6)


def test_measurement_is_reproducible_and_seed_dependent():
    dataset, encoder = ToyImages(), toy_encoder()
    first = geometry.measure(encoder, dataset, noisy, n_pairs=30, seed=1)
    again = geometry.measure(encoder, dataset, noisy, n_pairs=30, seed=1)
    other = geometry.measure(encoder, dataset, noisy, n_pairs=30, seed=2)
    assert first.as_dict() == again.as_dict()
    assert first.stats.negative_var != other.stats.negative_var
    assert 0 < first.stats.positive_var and first.stats.positive_mean < 1


def test_views_come_from_two_independent_augmentations():
    dataset, encoder = ToyImages(), toy_encoder()
    u, v, labels = geometry.measure_embeddings(encoder, dataset, noisy, n_pairs=10, seed=0)
    assert u.shape == v.shape == (10, 5) and u.dtype == torch.float32
    assert not torch.allclose(u, v)
    assert labels is not None and labels.dtype == torch.int64


def test_unlabelled_dataset_and_use_labels():
    encoder = toy_encoder()
    bare = geometry.measure(encoder, ToyImages(labelled=False), noisy, n_pairs=12)
    assert bare.stats.negative_same_class_count is None
    unsplit = geometry.measure(encoder, ToyImages(), noisy, n_pairs=12, use_labels=False)
    assert unsplit.stats.negative_same_class_count is None
    split = geometry.measure(encoder, ToyImages(), noisy, n_pairs=12)
    assert split.stats.negative_same_class_count > 0


def test_training_mode_is_restored():
    encoder = toy_encoder()
    encoder.train()
    geometry.measure(encoder, ToyImages(), noisy, n_pairs=8)
    assert encoder.training
    encoder.eval()
    geometry.measure(encoder, ToyImages(), noisy, n_pairs=8)
    assert not encoder.training


def test_whole_dataset_and_uniformity_fields():
    result = geometry.measure(toy_encoder(), ToyImages(count=9), noisy, n_pairs=None)
    assert result.n_pairs == 9
    row = result.as_dict()
    assert {"alignment", "uniformity", "uniformity_eq5", "negative_var"} <= row.keys()
    assert row["uniformity"] < 0


def test_monitor_logs_every_k_epochs_on_fixed_pairs():
    encoder = toy_encoder()
    monitor = geometry.SimilarityMonitor(ToyImages(), noisy, n_pairs=16, seed=5, every=2)
    rows = [monitor(encoder, epoch) for epoch in range(4)]
    assert rows[1] is None and rows[3] is None
    assert [row["epoch"] for row in monitor.history] == [0, 2]
    assert rows[0]["negative_var"] == rows[2]["negative_var"]  # same model, same pairs
    assert monitor(encoder)["epoch"] is None  # without an epoch it always measures


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_pairs": 41}, "n_pairs"),
        ({"n_pairs": 1}, "n_pairs"),
        ({"n_pairs": 2.5}, "n_pairs"),
        ({"n_pairs": 8, "batch_size": 0}, "batch_size"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        geometry.measure(toy_encoder(), ToyImages(), noisy, **kwargs)


def test_bad_encoder_augment_and_dataset():
    dataset = ToyImages()
    with pytest.raises(ValueError, match="encoder"):
        geometry.measure(nn.Identity(), dataset, noisy, n_pairs=4)
    with pytest.raises(ValueError, match="augment"):
        geometry.measure(toy_encoder(), dataset, lambda x, g: x[:1], n_pairs=4)
    with pytest.raises(ValueError, match="dataset items"):
        geometry.measure(toy_encoder(), [("not an image", 0)] * 5, noisy, n_pairs=4)
    with pytest.raises(ValueError, match="every"):
        geometry.SimilarityMonitor(dataset, noisy, every=0)


@pytest.mark.cuda
def test_measure_on_cuda_matches_cpu_statistics():
    encoder = toy_encoder().cuda()
    u, v, labels = geometry.measure_embeddings(encoder, ToyImages(), noisy, n_pairs=16)
    assert u.device.type == "cpu" and labels is not None
    on_device = geometry.similarity_stats(u.cuda(), v.cuda(), labels.cuda()).as_dict()
    on_host = geometry.similarity_stats(u, v, labels).as_dict()
    assert on_device == pytest.approx(on_host, abs=1e-12)
