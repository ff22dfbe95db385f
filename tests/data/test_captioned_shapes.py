"""Captioned shapes: a seeded, drawn image–caption dataset. The pictures are read back (object
pixels found against the background) and checked against what the captions and labels say."""

import re

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from contrastkit.data import (
    CaptionedImages,
    ImageTensorDataset,
    augmentation_for,
    load_captioned_shapes,
    load_dataset,
)
from contrastkit.data.captioned_shapes import (
    CLASS_NAMES,
    COLOURS,
    POSITIONS,
    PROMPTS,
    REGION_CENTRES,
    SHAPES,
)

SIDE = 32


@pytest.fixture(scope="module")
def test_split():
    return load_captioned_shapes("test")


def _foreground(image: np.ndarray) -> np.ndarray:
    """Pixels that differ from the background (the per-channel median) by more than 70."""
    background = np.median(image.reshape(3, -1), axis=1)
    return np.abs(image - background[:, None, None]).max(0) > 70


def _has_two_objects(captions) -> bool:
    return any(re.search(r" and a | of a | above a | below a ", text) for text in captions)


def _nearest(values, centres) -> int:
    return int(np.argmin(np.abs(np.asarray(centres) - values)))


def test_default_splits_shapes_and_types(test_split):
    train = load_captioned_shapes("train")
    assert isinstance(train, CaptionedImages) and isinstance(train, ImageTensorDataset)
    assert train.images.shape == (4000, 3, SIDE, SIDE) and train.images.dtype == torch.uint8
    assert test_split.images.shape == (1000, 3, SIDE, SIDE)
    assert train.labels.dtype == torch.long and train.labels.shape == (4000,)
    assert len(train.captions) == 4000 and all(len(texts) == 3 for texts in train.captions)
    assert all(len(set(texts)) == 3 for texts in train.captions)
    assert train.class_names == CLASS_NAMES and len(CLASS_NAMES) == 20
    assert CLASS_NAMES[:2] == ("red circle", "red square")
    assert train.prompts == PROMPTS and len(PROMPTS) >= 4
    info = train.info
    assert (info.name, info.channels, info.image_size, info.num_classes) == (
        "captioned_shapes", 3, SIDE, 20)
    assert test_split.info == info  # statistics from the training images, for every split
    mean = load_captioned_shapes("train", count=1000).images.double().div(255)
    assert info.mean == pytest.approx(tuple(mean.mean((0, 2, 3)).tolist()))
    assert all(0.05 < m < 0.3 for m in info.mean)  # a dark background


def test_items_and_batches_are_those_of_an_image_dataset(test_split):
    image, label = test_split[3]
    assert torch.equal(image, test_split.images[3]) and label == test_split.labels[3]
    images, labels = test_split.__getitems__([5, 1, 5])
    assert torch.equal(images, test_split.images[[5, 1, 5]])
    assert labels.tolist() == test_split.labels[[5, 1, 5]].tolist()
    # as the training loop reads batches: __getitems__ and no per-item collation
    images, labels = next(iter(DataLoader(test_split, batch_size=8, collate_fn=lambda b: b)))
    assert images.shape == (8, 3, SIDE, SIDE) and torch.equal(labels, test_split.labels[:8])


def test_same_seed_same_data_and_other_seeds_or_splits_differ(test_split):
    again = load_captioned_shapes("test")
    assert torch.equal(again.images, test_split.images)
    assert again.captions == test_split.captions and torch.equal(again.labels, test_split.labels)
    other = load_captioned_shapes("test", seed=1)
    assert not torch.equal(other.labels, test_split.labels)
    assert (other.images != test_split.images).flatten(1).any(1).all()
    assert sum(a != b for a, b in zip(other.captions, test_split.captions, strict=True)) > 900


def test_train_and_test_are_disjoint_streams(test_split):
    train = load_captioned_shapes("train")
    train_images = {image.numpy().tobytes() for image in train.images}
    assert not any(image.numpy().tobytes() in train_images for image in test_split.images)
    assert not torch.equal(train.labels[:1000], test_split.labels)
    pairs = zip(train.captions[:1000], test_split.captions, strict=True)
    assert sum(a != b for a, b in pairs) > 900


def test_a_smaller_count_is_a_prefix_and_the_stream_is_pinned():
    full = load_captioned_shapes("train", count=130)
    head = load_captioned_shapes("train", count=47)
    assert torch.equal(head.images, full.images[:47]) and head.captions == full.captions[:47]
    assert torch.equal(head.labels, full.labels[:47])
    # seed 0's first labels and captions: a change to the generator changes these
    assert full.labels[:10].tolist() == [11, 3, 13, 2, 15, 1, 18, 19, 17, 8]
    assert full.captions[2] == ("a yellow square in the bottom left on a dark background",
                                "a single large yellow square",
                                "a large yellow square in the bottom left")


def test_labels_are_balanced_in_blocks_of_twenty(test_split):
    assert test_split.labels.bincount(minlength=20).tolist() == [50] * 20
    for start in range(0, 1000, 20):
        assert sorted(test_split.labels[start:start + 20].tolist()) == list(range(20))
    assert load_captioned_shapes("test", count=30).labels.bincount(minlength=20).max() == 2


def test_every_caption_names_the_labelled_object(test_split):
    for label, texts in zip(test_split.labels.tolist(), test_split.captions, strict=True):
        assert all(CLASS_NAMES[label] in text for text in texts)
    for prompt in PROMPTS:
        assert prompt.format(CLASS_NAMES[0]).count("red circle") == 1


def test_about_half_of_the_images_hold_two_objects_of_different_classes(test_split):
    two = [_has_two_objects(texts) for texts in test_split.captions]
    assert 0.44 < np.mean(two) < 0.56
    pattern = re.compile(r"two shapes: a (\w+ \w+) and a (\w+ \w+)")
    pairs = [match.groups() for texts in test_split.captions for text in texts
             if (match := pattern.fullmatch(text))]
    assert len(pairs) > 200 and all(first != second for first, second in pairs)
    assert len(set(pairs)) > 150  # second objects of many classes


def test_a_lone_object_is_drawn_where_and_as_the_captions_say(test_split):
    """Position, colour, size and shape of each lone object, read from its pixels."""
    palette = np.asarray(list(COLOURS.values()))
    checked, shapes_right, shapes_checked = 0, 0, 0
    for index, texts in enumerate(test_split.captions):
        if _has_two_objects(texts):
            continue
        image = test_split.images[index].numpy().astype(np.int64)
        mask = _foreground(image)
        ys, xs = np.nonzero(mask)
        column = _nearest((xs.mean() + 0.5) / SIDE, REGION_CENTRES)
        row = _nearest((ys.mean() + 0.5) / SIDE, REGION_CENTRES)
        assert sum(POSITIONS[row][column] in text for text in texts) >= 2, (index, texts)
        colour, shape = CLASS_NAMES[test_split.labels[index]].split()
        # the colour that most pixels are near (the object's edges mix with the background)
        drawn = np.argmax((np.abs(image[None] - palette[:, :, None, None]).max(1) < 60).sum((1, 2)))
        assert list(COLOURS)[drawn] == colour, (index, texts)
        size = "large" if _radius(image, mask, colour, shape) > 0.12 else "small"
        assert not any(word in text for text in texts
                       for word in {"large", "small"} - {size}), (index, texts)
        checked += 1
        if size == "large":
            shapes_checked += 1
            shapes_right += _shape_of(mask) == shape
    assert checked > 450 and shapes_checked > 200
    assert shapes_right >= 0.97 * shapes_checked  # about 25 % if shapes were mislabelled


def _radius(image: np.ndarray, mask: np.ndarray, colour: str, shape: str) -> float:
    """The object's radius as a fraction of the side: its area (the sum of each pixel's share
    of the object's colour, near the object) over the shape's area at radius 1."""
    background = np.median(image.reshape(3, -1), axis=1)
    towards = np.asarray(COLOURS[colour]) - background
    share = np.einsum("chw,c->hw", image - background[:, None, None], towards) / (towards @ towards)
    ys, xs = np.nonzero(mask)
    near = share[max(ys.min() - 1, 0):ys.max() + 2, max(xs.min() - 1, 0):xs.max() + 2]
    unit_area = {"circle": np.pi, "square": 1.7 ** 2, "triangle": 3 * 3 ** 0.5 / 4 * 1.45 ** 2,
                 "cross": 2 * 2.1 * 0.72 - 0.72 ** 2}[shape]
    return float(np.sqrt(near.clip(0, 1).sum() / unit_area)) / SIDE


def _shape_of(mask: np.ndarray) -> str:
    """Triangle: mass low in its bounding box; else by how much of the box's corners (away
    from both axes) is filled: square all, circle some, cross none."""
    ys, xs = np.nonzero(mask)
    top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    if (ys.mean() - top) / (bottom - top) > 0.59:
        return "triangle"
    rows, columns = np.mgrid[top:bottom + 1, left:right + 1]
    away = ((np.abs(rows - (top + bottom) / 2) > 0.45 * (bottom - top) / 2)
            & (np.abs(columns - (left + right) / 2) > 0.45 * (right - left) / 2))
    corners = mask[top:bottom + 1, left:right + 1][away].mean()
    return "square" if corners > 0.71 else "circle" if corners > 0.27 else "cross"


def test_the_relation_words_match_where_the_two_objects_are(test_split):
    palette = np.asarray(list(COLOURS.values()))
    opposite = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
    checked = 0
    for index, texts in enumerate(test_split.captions):
        main = CLASS_NAMES[test_split.labels[index]]
        relation = None
        for text in texts:
            match = re.fullmatch(r"a \w+ (\w+ \w+) (left of|right of|above|below) a \w+ (\w+ \w+)",
                                 text)
            if match:
                first, word, second = match.groups()
                relation = word if first == main else opposite[word]
                other = second if first == main else first
        if relation is None or main.split()[0] == other.split()[0]:
            continue  # no relation caption, or both objects of one colour
        image = test_split.images[index].numpy().astype(np.int64)
        # each object's pixels: those near its colour (edges, mixed with the background, not)
        colours = palette[[list(COLOURS).index(name.split()[0]) for name in (main, other)]]
        near = np.abs(image[None] - colours[:, :, None, None]).max(1) < 60
        assert near[0].sum() >= 5 and near[1].sum() >= 5, (index, texts)
        (main_y, main_x), (other_y, other_x) = [np.argwhere(one).mean(0) for one in near]
        expected = {"left of": main_x < other_x - 3, "right of": main_x > other_x + 3,
                    "above": main_y < other_y - 3, "below": main_y > other_y + 3}
        assert expected[relation], (index, texts)
        checked += 1
    assert checked > 250


def test_size_scales_the_drawing():
    large = load_captioned_shapes("test", size=64, count=40)
    small = load_captioned_shapes("test", count=40)
    assert large.images.shape == (40, 3, 64, 64) and large.info.image_size == 64
    assert large.captions == small.captions and torch.equal(large.labels, small.labels)
    downsampled = torch.nn.functional.avg_pool2d(large.images.float(), 2)
    assert (downsampled - small.images.float()).abs().mean() < 12  # the same pictures


@pytest.mark.parametrize(("arguments", "message"), [
    ({"split": "val"}, r"split must be 'train' or 'test' for captioned_shapes, got 'val'"),
    ({"split": "train", "size": 8}, r"size must be an integer >= 16, got 8"),
    ({"split": "train", "size": 32.0}, r"size must be an integer"),
    ({"split": "train", "count": 0}, r"count must be a positive integer, got 0"),
    ({"split": "train", "seed": -1}, r"seed must be a non-negative integer, got -1"),
])
def test_bad_arguments_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        load_captioned_shapes(**arguments)


def test_registered_with_a_recipe_that_keeps_colours_and_sides(test_split):
    loaded = load_dataset("captioned_shapes", "test", root="unused")
    assert torch.equal(loaded.images, test_split.images) and loaded.prompts == PROMPTS
    assert len(load_dataset("captioned_shapes", "train")) == 4000
    augment = augmentation_for("captioned_shapes", SIDE)
    assert augment.size == SIDE and augment.flip_p == 0.0
    assert augment.hue == 0.0 and augment.saturation == 0.0 and augment.grayscale_p == 0.0
    assert augment.crop_scale[0] >= 0.8 and augment.blur_p == 0.0
    assert SHAPES == ("circle", "square", "triangle", "cross")
