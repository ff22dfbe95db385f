"""Image–caption pairs listed in a CSV or TSV file, the format open_clip's training reads.

The file has a header row; one column holds image paths (default ``filepath``) and one the
captions (default ``title``): open_clip's ``--csv-img-key filepath --csv-caption-key title``.
The separator is a tab for ``.tsv`` and a comma for ``.csv`` (``--csv-separator``); fields may
be quoted (``"a cat, sleeping"``); the file is read as UTF-8 (a byte-order mark is skipped).
Other columns are ignored. An image path that is not absolute is relative to the file's
folder. Example ``train.tsv``::

    filepath	title
    images/0001.jpg	a dog running on the beach
    images/0002.jpg	two cups of coffee on a table

Each image is read with PIL, converted to RGB, its shorter side resized to ``image_size``
(bicubic) and the central ``image_size`` square kept. Rows that name the same image (after
resolving the path) give that image several captions, in file order; images keep the order of
their first row. Everything is held in memory (``3 * image_size**2`` bytes per image). The
file has no classes: labels are all ``-1``, there are no class names or prompts, and the
normalization statistics are the images' own. Every error names the caption file, and an
error about a row its line (the last line of a row whose quoted caption spans several), as
``caption file PATH, line N: ...``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import torch

from contrastkit.files import FileAccessError, read_utf8

from .captions import CaptionedImages
from .images import DatasetInfo, channel_stats
from .vision import DatasetUnavailableError

SEPARATORS = {".tsv": "\t", ".csv": ","}
SPLITS = ("train", "test")


def load_caption_split(root: str | Path, split: str, *, image_size: int = 96) -> CaptionedImages:
    """Split ``split`` (``"train"`` or ``"test"``) of the caption files in folder ``root``:
    ``root/<split>.tsv`` or ``root/<split>.csv`` (exactly one of them) read by
    :func:`load_caption_file` with the default columns ``filepath`` and ``title``."""
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'test' for captions, got {split!r}")
    candidates = [Path(root) / f"{split}{suffix}" for suffix in SEPARATORS]
    found = [path for path in candidates if path.exists()]
    if not found:
        looked = " and ".join(str(path.resolve()) for path in candidates)
        raise DatasetUnavailableError(
            f"captions not found: looked for {looked}. Put there a tab-separated {split}.tsv "
            f"(or a comma-separated {split}.csv) with a header row and the columns filepath "
            f"(image paths, relative to the file's folder) and title (captions).")
    if len(found) > 1:
        raise ValueError(f"caption files {found[0]} and {found[1]} both exist; keep one of "
                         f"them")
    return load_caption_file(found[0], image_size=image_size)


def load_caption_file(path: str | Path, *, image_size: int = 96, image_key: str = "filepath",
                      caption_key: str = "title") -> CaptionedImages:
    """The images and captions listed in the CSV or TSV file ``path`` (see the module
    docstring), images ``uint8`` ``(N, 3, image_size, image_size)``.

    A missing file or image raises :class:`~contrastkit.data.vision.DatasetUnavailableError`
    (a ``ValueError``); a folder where the file or an image should be, a missing column, an
    empty path or caption, text that is not UTF-8, an image that cannot be decoded or a file
    with no rows a ``ValueError``; a file or image that cannot be read for a reason of the file
    system (no permission) a :class:`~contrastkit.files.FileAccessError`. Each names the file
    and, for a row, its line.
    """
    path = Path(path)
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 1:
        raise ValueError(f"image_size must be a positive integer, got {image_size!r}")
    separator = SEPARATORS.get(path.suffix.lower())
    if separator is None:
        raise ValueError(f"caption file {path} must end in .tsv (tab-separated) or .csv "
                         f"(comma-separated), got {path.suffix or 'no suffix'!r}")
    if path.is_dir():
        raise ValueError(f"caption file {path} is a folder; expected a {path.suffix} file")
    if not path.is_file():
        raise DatasetUnavailableError(f"caption file {path.resolve()} not found")
    rows = _read_rows(path, separator, image_key, caption_key)
    order: dict[Path, int] = {}
    captions: list[list[str]] = []
    images: list[np.ndarray] = []
    for line, image_path, caption in rows:
        if image_path not in order:
            order[image_path] = len(images)
            images.append(_read_image(image_path, image_size,
                                      f"caption file {path}, line {line}"))
            captions.append([])
        captions[order[image_path]].append(caption)
    stacked = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()
    mean, std = channel_stats(stacked)
    info = DatasetInfo("captions", channels=3, image_size=image_size, num_classes=0,
                       mean=mean, std=std)
    labels = torch.full((len(images),), -1, dtype=torch.long)
    return CaptionedImages(stacked, captions, labels, info)


def _read_rows(path: Path, separator: str, image_key: str,
               caption_key: str) -> list[tuple[int, Path, str]]:
    """``(line, resolved image path, caption)`` of each row of ``path``."""
    rows = []
    with io.StringIO(read_utf8(path, f"caption file {path}"), newline="") as file:
        reader = csv.DictReader(file, delimiter=separator)
        header = reader.fieldnames
        if header is None:
            raise ValueError(f"caption file {path} is empty: it needs a header row naming the "
                             f"columns {image_key!r} and {caption_key!r}")
        for key, what in ((image_key, "image paths"), (caption_key, "captions")):
            if key not in header:
                raise ValueError(f"caption file {path}, line 1: no column {key!r} (the "
                                 f"{what}) in the header; columns: {', '.join(map(repr, header))}"
                                 f" (separator {separator!r})")
        try:
            for row in reader:
                image, caption = row[image_key], row[caption_key]
                if image is None or caption is None:
                    raise ValueError(f"caption file {path}, line {reader.line_num}: the row has "
                                     f"fewer fields than the header")
                if not image.strip():
                    raise ValueError(f"caption file {path}, line {reader.line_num}: empty image "
                                     f"path in column {image_key!r}")
                if not caption.strip():
                    raise ValueError(f"caption file {path}, line {reader.line_num}: empty "
                                     f"caption in column {caption_key!r}")
                rows.append((reader.line_num, (path.parent / image.strip()).resolve(),
                             caption.strip()))
        except csv.Error as error:
            raise ValueError(f"caption file {path}, line {reader.line_num}: {error}") from None
    if not rows:
        raise ValueError(f"caption file {path} has a header but no rows")
    return rows


def _read_image(path: Path, image_size: int, where: str) -> np.ndarray:
    """The image at ``path`` as ``uint8`` ``(image_size, image_size, 3)``: RGB, shorter side
    resized to ``image_size``, central square; errors say ``where`` it was listed."""
    from PIL import Image, UnidentifiedImageError

    if path.is_dir():
        raise ValueError(f"{where}: image {path} is a folder; expected an image file")
    if not path.is_file():
        raise DatasetUnavailableError(f"{where}: image {path} not found")
    try:
        with Image.open(path) as image:
            image.draft("RGB", (image_size, image_size))  # JPEG: decode at a reduced scale
            image = image.convert("RGB")
    except PermissionError as error:  # the file system's, not the image's
        raise FileAccessError(f"{where}: cannot read image {path} ({error.strerror})") from None
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as error:
        raise ValueError(f"{where}: cannot read image {path} ({error})") from None
    width, height = image.size
    scale = image_size / min(width, height)
    resized = (max(image_size, round(width * scale)), max(image_size, round(height * scale)))
    if resized != image.size:
        # Image.BICUBIC: every Pillow has it, the stubs only Image.Resampling's (Pillow >= 9.1)
        image = image.resize(resized, Image.BICUBIC)  # type: ignore[attr-defined]
    left, top = (resized[0] - image_size) // 2, (resized[1] - image_size) // 2
    image = image.crop((left, top, left + image_size, top + image_size))
    return np.asarray(image, dtype=np.uint8)
