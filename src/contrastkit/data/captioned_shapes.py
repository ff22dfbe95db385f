"""Captioned shapes: small procedurally drawn RGB images of coloured shapes, with captions.

An offline image–text dataset for CLIP/SigLIP training that a small CNN and a small text
encoder learn on a CPU in minutes. Everything is drawn from ``seed`` and the split (train and
test are separate random streams), with numpy only; 5 000 images at 32x32 take a fraction of a
second. The generative model of image ``i`` of a split of ``count`` images of side ``S``:

1. **Main object** (its label): the class ``(colour, shape)``, one of
   :data:`CLASS_NAMES` (5 colours x 4 shapes = 20, colour-major: ``"red circle"`` is 0,
   ``"red square"`` 1, ...), is balanced: each consecutive block of 20 images holds every class
   once, in random order. Colours: red, green, blue, yellow, white; shapes: circle, square,
   triangle (pointing up), cross (a plus sign).
2. **Number of objects**: two with probability 1/2, else one. The **second object**'s class is
   uniform over the 19 other classes (a caption's colour and shape name one object).
3. **Sizes**: radius ``r`` of ``0.16 S`` ("large") or ``0.09 S`` ("small"), times a factor uniform
   in ``[0.9, 1.1]``. A lone main object is large or small with probability 1/2 each; with two
   objects the main one is large and the second small (the label is the larger object).
4. **Positions**: the main object's region is uniform over the 3x3 grid (rows top, middle,
   bottom; columns left, centre, right), the second object's uniform over the 8 others; the
   centre of a region is at ``(0.2, 0.5, 0.8) S`` on each axis, plus an offset uniform in
   ``[-0.04 S, 0.04 S]`` on each axis. Their relation ("left of", "right of", "above",
   "below": the main object's place relative to the second's) is read off the regions:
   horizontal when the columns differ at least as much as the rows, else vertical.
5. **Pixels**: a flat dark background, each channel uniform in ``0..40``; the main object,
   then the second on top, drawn anti-aliased (coverage ``clip(0.5 - d, 0, 1)`` of a signed
   distance ``d`` in pixels, sampled at pixel centres) in its colour's RGB value
   (:data:`COLOURS`) plus Gaussian noise of standard deviation 12 per channel and object; then
   Gaussian pixel noise of standard deviation 6 per pixel and channel, rounded and clipped to
   ``uint8``. Square: half-side ``0.85 r``; triangle: equilateral, circumradius ``1.45 r``, its
   bounding box centred on the object's centre; cross: arms of half-length ``1.05 r`` and
   half-width ``0.36 r``.
6. **Captions**: 3 different templates, drawn uniformly without replacement from 4 for a lone
   object and 5 for two (:data:`ONE_OBJECT_TEMPLATES`, :data:`TWO_OBJECT_TEMPLATES`), all naming
   the main object as ``"<colour> <shape>"`` and most adding sizes, positions or the second object,
   e.g. "a large red circle left of a small blue square", "a small blue square right of a large red
   circle", "two shapes: a red circle and a blue square", "in the top left, a small green cross".

Each random quantity has its own stream (keyed by ``seed``, the split and the quantity), drawn
in image order, so the first ``k`` images of a split do not depend on ``count``. The labels
are the main object's class, for zero-shot classification with :data:`PROMPTS`. Chance is
1/20 for classification and ``1/count`` for retrieval. A caption also fixes sizes, positions
and the second object, so a model that knows only the label retrieves the right image first
(text-to-image R@1) rarely; even an ideal one cannot reach 100 %: a caption that fits several
images of the test split (1 000 images, 3 000 captions) leaves a tie it can only break at
random.
Normalization statistics come from the first 1 000 training images (same ``size`` and
``seed``), so every split and ``count`` share the same :class:`DatasetInfo`.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .captions import CaptionedImages
from .images import DatasetInfo, channel_stats

COLOURS = {
    "red": (220, 45, 45),
    "green": (45, 200, 70),
    "blue": (55, 95, 240),
    "yellow": (235, 215, 40),
    "white": (235, 235, 235),
}
SHAPES = ("circle", "square", "triangle", "cross")
CLASS_NAMES = tuple(f"{colour} {shape}" for colour in COLOURS for shape in SHAPES)
PROMPTS = (
    "a photo of a {}.",
    "a {} on a dark background.",
    "a drawing of a {}.",
    "a picture of a {}.",
    "a {}.",
    "a small picture with a {} in it.",
)
ONE_OBJECT_TEMPLATES = (
    "a {size} {colour} {shape} {position}",
    "a {colour} {shape} {position} on a dark background",
    "{position}, a {size} {colour} {shape}",
    "a single {size} {colour} {shape}",
)
TWO_OBJECT_TEMPLATES = (
    "a {size} {colour} {shape} {relation} a {size2} {colour2} {shape2}",
    "a {size2} {colour2} {shape2} {inverse} a {size} {colour} {shape}",
    "a {size} {colour} {shape} and a {size2} {colour2} {shape2}",
    "a {size} {colour} {shape} {position} and a {size2} {colour2} {shape2} {position2}",
    "two shapes: a {colour} {shape} and a {colour2} {shape2}",
)
CAPTIONS_PER_IMAGE = 3
POSITIONS = (
    ("in the top left", "at the top", "in the top right"),
    ("on the left", "in the centre", "on the right"),
    ("in the bottom left", "at the bottom", "in the bottom right"),
)
RADII = {"small": 0.09, "large": 0.16}  # fractions of the image side
REGION_CENTRES = (0.2, 0.5, 0.8)  # fractions of the image side, per row and per column
CENTRE_JITTER = 0.04
RADIUS_JITTER = (0.9, 1.1)
BACKGROUND_MAX = 40
COLOUR_NOISE = 12.0
PIXEL_NOISE = 6.0
DEFAULT_COUNTS = {"train": 4000, "test": 1000}
STATS_COUNT = 1000
MIN_SIZE = 16
_SPLIT_KEYS = {"train": 0, "test": 1}
_STREAMS = ("label", "objects", "second", "size", "region", "region2", "offset", "radius",
            "colour", "background", "pixels", "captions")
_CHUNK = 512  # images drawn at a time (bounds the memory at large sizes)


def load_captioned_shapes(split: str, *, size: int = 32, count: int | None = None,
                          seed: int = 0) -> CaptionedImages:
    """The ``"train"`` (4 000 images) or ``"test"`` (1 000 images) split of captioned shapes
    (see the module docstring), ``count`` images instead if given, ``size`` x ``size`` RGB."""
    if split not in _SPLIT_KEYS:
        raise ValueError(f"split must be 'train' or 'test' for captioned_shapes, got {split!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < MIN_SIZE:
        raise ValueError(f"size must be an integer >= {MIN_SIZE}, got {size!r}")
    if count is None:
        count = DEFAULT_COUNTS[split]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    images, captions, labels = generate(split, size, count, seed)
    mean, std = _training_stats(size, seed)
    info = DatasetInfo("captioned_shapes", channels=3, image_size=size,
                       num_classes=len(CLASS_NAMES), mean=mean, std=std)
    return CaptionedImages(torch.from_numpy(images), captions, torch.from_numpy(labels), info,
                           class_names=CLASS_NAMES, prompts=PROMPTS)


def generate(split: str, size: int, count: int, seed: int
             ) -> tuple[np.ndarray, tuple[tuple[str, ...], ...], np.ndarray]:
    """``(images uint8 (count, 3, size, size), captions, labels int64 (count,))`` of the
    generative model in the module docstring (no argument checks)."""
    rng = {name: np.random.default_rng([seed, _SPLIT_KEYS[split], key])
           for key, name in enumerate(_STREAMS)}
    classes = len(CLASS_NAMES)
    blocks = -(-count // classes)
    labels = np.argsort(rng["label"].random((blocks, classes)), axis=1).ravel()[:count]
    two = rng["objects"].random(count) < 0.5
    other = rng["second"].integers(0, classes - 1, count)
    second = other + (other >= labels)
    large = np.where(two, True, rng["size"].random(count) < 0.5)
    region = rng["region"].integers(0, 9, count)
    other = rng["region2"].integers(0, 8, count)
    region2 = other + (other >= region)
    regions = np.stack([region, region2], axis=1)
    centres = np.asarray(REGION_CENTRES)
    offset = rng["offset"].uniform(-CENTRE_JITTER, CENTRE_JITTER, (count, 2, 2))
    centre = np.stack([centres[regions % 3], centres[regions // 3]], axis=2) + offset
    radius = np.stack([np.where(large, RADII["large"], RADII["small"]),
                       np.full(count, RADII["small"])], axis=1)
    radius = radius * rng["radius"].uniform(*RADIUS_JITTER, (count, 2))
    palette = np.asarray(list(COLOURS.values()), dtype=np.float32)
    objects = np.stack([labels, second], axis=1)
    colour = palette[objects // len(SHAPES)]
    colour = colour + rng["colour"].normal(0.0, COLOUR_NOISE, (count, 2, 3)).astype(np.float32)
    background = rng["background"].integers(0, BACKGROUND_MAX + 1, (count, 3))

    images = np.empty((count, 3, size, size), dtype=np.uint8)
    grid = np.arange(size, dtype=np.float32) + 0.5
    for start in range(0, count, _CHUNK):
        rows = slice(start, min(start + _CHUNK, count))
        canvas = np.broadcast_to(background[rows, :, None, None].astype(np.float32),
                                 (rows.stop - start, 3, size, size)).copy()
        for index in (0, 1):
            present = np.arange(rows.start, rows.stop)
            if index == 1:
                present = present[two[rows]]
            coverage = _coverage(objects[present, index] % len(SHAPES),
                                 centre[present, index] * size, radius[present, index] * size,
                                 grid)
            local = present - start
            canvas[local] += coverage[:, None] * (colour[present, index, :, None, None]
                                                  - canvas[local])
        canvas += rng["pixels"].standard_normal(canvas.shape, dtype=np.float32) * PIXEL_NOISE
        images[rows] = np.clip(np.rint(canvas), 0, 255).astype(np.uint8)

    choice = np.argsort(rng["captions"].random((count, len(TWO_OBJECT_TEMPLATES))), axis=1)
    captions = tuple(_captions(labels[i], second[i], bool(two[i]), bool(large[i]),
                               regions[i], choice[i]) for i in range(count))
    return images, captions, labels.astype(np.int64)


def _coverage(shapes: np.ndarray, centre: np.ndarray, radius: np.ndarray,
              grid: np.ndarray) -> np.ndarray:
    """Anti-aliased coverage ``(n, size, size)`` in ``[0, 1]`` of ``n`` shapes (indices into
    :data:`SHAPES`) with centres ``(n, 2)`` (x, y) and radii ``(n,)`` in pixels."""
    size = grid.shape[0]
    distance = np.empty((shapes.shape[0], size, size), dtype=np.float32)
    for shape_index, shape in enumerate(SHAPES):
        chosen = np.flatnonzero(shapes == shape_index)
        if chosen.size == 0:
            continue
        r = radius[chosen, None, None].astype(np.float32)
        dx = grid[None, None, :] - centre[chosen, 0, None, None].astype(np.float32)
        dy = grid[None, :, None] - centre[chosen, 1, None, None].astype(np.float32)
        if shape == "circle":
            d = np.sqrt(dx * dx + dy * dy) - r
        elif shape == "square":
            d = np.maximum(np.abs(dx), np.abs(dy)) - 0.85 * r
        elif shape == "triangle":
            big = 1.45 * r
            dy = dy - big / 4  # the bounding box (y from -R to R/2) centred on the centre
            d = np.maximum(np.maximum(dy, 0.866 * dx - 0.5 * dy), -0.866 * dx - 0.5 * dy)
            d = d - big / 2
        else:  # cross
            arm, half_width = 1.05 * r, 0.36 * r
            ax, ay = np.abs(dx), np.abs(dy)
            d = np.minimum(np.maximum(ax - arm, ay - half_width),
                           np.maximum(ax - half_width, ay - arm))
        distance[chosen] = d
    return np.clip(0.5 - distance, 0.0, 1.0)


def _captions(label: int, second: int, two: bool, large: bool, regions: np.ndarray,
              choice: np.ndarray) -> tuple[str, ...]:
    """The :data:`CAPTIONS_PER_IMAGE` captions of one image (``choice``: a permutation of the
    template indices)."""
    colours = tuple(COLOURS)
    words = {
        "colour": colours[label // len(SHAPES)], "shape": SHAPES[label % len(SHAPES)],
        "size": "large" if large else "small",
        "position": POSITIONS[regions[0] // 3][regions[0] % 3],
    }
    templates: tuple[str, ...]
    if not two:
        templates = ONE_OBJECT_TEMPLATES
    else:
        templates = TWO_OBJECT_TEMPLATES
        row, column = divmod(int(regions[0]), 3)
        row2, column2 = divmod(int(regions[1]), 3)
        if abs(column - column2) >= abs(row - row2):
            relation, inverse = (("left of", "right of") if column < column2
                                 else ("right of", "left of"))
        else:
            relation, inverse = ("above", "below") if row < row2 else ("below", "above")
        words.update(colour2=colours[second // len(SHAPES)], shape2=SHAPES[second % len(SHAPES)],
                     size2="small", position2=POSITIONS[row2][column2], relation=relation,
                     inverse=inverse)
    chosen = [index for index in choice if index < len(templates)][:CAPTIONS_PER_IMAGE]
    return tuple(templates[index].format(**words) for index in chosen)


@functools.lru_cache(maxsize=8)
def _training_stats(size: int, seed: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of the first :data:`STATS_COUNT` training images."""
    images, _, _ = generate("train", size, STATS_COUNT, seed)
    return channel_stats(torch.from_numpy(images))
