"""The batched SimCLR augmentations: seeded, per-sample, and exact on known cases."""

import dataclasses

import pytest
import torch

from contrastkit.data import SimCLRAugment, TwoViewDataset, augmentation_for, two_views
from contrastkit.data.images import DatasetInfo, ImageTensorDataset

IDENTITY = SimCLRAugment(size=16, crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0), flip_p=0.0,
                         jitter_p=0.0, grayscale_p=0.0, blur_p=0.0)


def images(batch=6, channels=3, size=16, seed=0):
    return torch.rand(batch, channels, size, size, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dataset, size", [("digits", 8), ("cifar10", 32), ("stl10", 24)])
def test_same_seed_same_views_and_the_two_views_differ(dataset, size):
    augment = augmentation_for(dataset, size)
    x = images(channels=1 if dataset == "digits" else 3, size=size)
    first = two_views(x, augment, torch.Generator().manual_seed(7))
    second = two_views(x, augment, torch.Generator().manual_seed(7))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert not torch.allclose(first[0], first[1])
    other = two_views(x, augment, torch.Generator().manual_seed(8))
    assert not torch.allclose(first[0], other[0])
    assert first[0].shape == (6, x.shape[1], size, size)
    assert float(first[0].min()) >= 0 and float(first[0].max()) <= 1


def test_each_image_gets_its_own_parameters():
    params = augmentation_for("cifar10", 32).sample(64, torch.Generator().manual_seed(0))
    assert params.crop.unique(dim=0).shape[0] == 64
    assert 0.6 < float((params.brightness != 1).float().mean()) < 0.95  # jitter p = 0.8


def test_identity_parameters_return_the_input():
    x = images()
    assert torch.allclose(IDENTITY(x, torch.Generator().manual_seed(0)), x, atol=1e-6)


def test_flip_mirrors_and_grayscale_equalizes_channels():
    x = images()
    flipped = dataclasses.replace(IDENTITY, flip_p=1.0)(x, torch.Generator())
    assert torch.allclose(flipped, x.flip(3), atol=1e-6)
    gray = dataclasses.replace(IDENTITY, grayscale_p=1.0)(x, torch.Generator())
    luminance = 0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]
    for channel in range(3):
        assert torch.allclose(gray[:, channel], luminance, atol=1e-6)


def test_crop_resamples_the_chosen_region_bilinearly():
    """On an image whose value is its column index / 15, the crop of width w centered at c gives,
    at output column k, the input column ((2c - 1 + w ((2k + 1)/16 - 1) + 1) 16 - 1) / 2."""
    augment = dataclasses.replace(IDENTITY, crop_scale=(0.25, 0.25))
    x = (torch.arange(16.0) / 15).expand(2, 1, 16, 16).contiguous()
    params = augment.sample(2, torch.Generator().manual_seed(0))
    out = augment.apply(x, params)
    for row in range(2):
        center_x, _, width, height = params.crop[row].tolist()
        assert width == pytest.approx(0.5) and height == pytest.approx(0.5)
        k = torch.arange(16.0)
        source = 2 * center_x - 1 + width * ((2 * k + 1) / 16 - 1)
        expected = (((source + 1) * 16 - 1) / 2).clamp(0, 15) / 15
        assert torch.allclose(out[row, 0], expected.expand(16, 16).float(), atol=1e-4)


def test_blur_keeps_constant_images_and_smooths_noise():
    augment = dataclasses.replace(IDENTITY, blur_p=1.0, blur_sigma=(1.0, 1.0), size=32)
    constant = torch.full((2, 3, 32, 32), 0.3)
    assert torch.allclose(augment(constant, torch.Generator()), constant, atol=1e-6)
    noise = images(size=32)
    assert augment(noise, torch.Generator()).std() < 0.6 * noise.std()


def test_applying_a_slice_of_the_parameters_equals_slicing_the_batch():
    """What data parallelism relies on: each process applies its rows of the global draw."""
    augment = augmentation_for("stl10", 16)
    x = images(batch=8)
    params = augment.sample(8, torch.Generator().manual_seed(1))
    whole = augment.apply(x, params)
    halves = torch.cat([augment.apply(x[:4], params[:4]), augment.apply(x[4:], params[4:])])
    assert torch.allclose(whole, halves, atol=1e-6)


def test_two_view_dataset_yields_reproducible_views_label_and_index():
    info = DatasetInfo("digits", 1, 8, 10, (0.5,), (0.5,))
    pixels = torch.randint(0, 256, (5, 1, 8, 8), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(0))
    base = ImageTensorDataset(pixels, torch.arange(5), info)
    wrapped = TwoViewDataset(base, augmentation_for("digits", 8), seed=3)
    view1, view2, label, index = wrapped[2]
    assert view1.shape == (1, 8, 8) and int(label) == 2 and index == 2
    assert not torch.equal(view1, view2)
    assert torch.equal(wrapped[2][0], view1)
    wrapped.set_epoch(1)
    assert not torch.equal(wrapped[2][0], view1)


def test_bad_input_is_rejected():
    augment = augmentation_for("cifar10", 32)
    params = augment.sample(2, torch.Generator())
    with pytest.raises(ValueError, match="images must have shape"):
        augment.apply(torch.rand(3, 3, 32, 32), params)
    with pytest.raises(ValueError, match="floating point"):
        augment.apply(torch.zeros(2, 3, 32, 32, dtype=torch.uint8), params)
    with pytest.raises(ValueError, match="dataset must be one of"):
        augmentation_for("mnist", 28)
