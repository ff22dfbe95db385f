"""Caption files in open_clip's CSV/TSV format (header, ``filepath`` and ``title`` columns),
written with real PNGs in a temporary folder; and the checks of :class:`CaptionedImages`."""

import codecs
import errno
import os

import numpy as np
import pytest
import torch
from PIL import Image

from contrastkit.data import (
    CaptionedImages,
    DatasetInfo,
    augmentation_for,
    load_caption_file,
    load_caption_split,
    load_dataset,
)
from contrastkit.data.vision import DatasetUnavailableError
from contrastkit.files import FileAccessError

RED, GREEN, BLUE = (200, 10, 10), (10, 200, 10), (10, 10, 200)


def _png(path, pixels: np.ndarray, mode: str | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(pixels.astype(np.uint8))
    (image.convert(mode) if mode else image).save(path)
    return path


def _banded(height: int, width: int) -> np.ndarray:
    """Left quarter red, middle half green, right quarter blue (a landscape image)."""
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[:, :width // 4] = RED
    pixels[:, width // 4:3 * width // 4] = GREEN
    pixels[:, 3 * width // 4:] = BLUE
    return pixels


def _halves(height: int, width: int) -> np.ndarray:
    """Top half red, bottom half blue."""
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[:height // 2] = RED
    pixels[height // 2:] = BLUE
    return pixels


def _write(path, rows, separator="\t", header=("filepath", "title")):
    lines = [separator.join(header)] + [separator.join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path):
    _png(tmp_path / "images" / "wide.png", _banded(24, 48))
    _png(tmp_path / "images" / "tall.png", _halves(40, 24))
    _png(tmp_path / "images" / "gray.png", np.full((30, 30, 3), 90), mode="L")
    _png(tmp_path / "images" / "alpha.png", np.full((30, 30, 3), 60), mode="RGBA")
    return tmp_path


def test_reads_a_tsv_of_paths_and_titles(folder):
    path = _write(folder / "train.tsv", [
        ("images/wide.png", "a striped flag"),
        ("images/tall.png", "red over blue"),
        ("images/wide.png", "three bands of colour"),
        ("images/gray.png", "a grey square"),
        ("images/alpha.png", "a see-through square"),
    ])
    data = load_caption_file(path, image_size=24)
    assert isinstance(data, CaptionedImages) and len(data) == 4
    assert data.images.dtype == torch.uint8 and data.images.shape == (4, 3, 24, 24)
    # rows naming one image give it several captions; images in the order of their first row
    assert data.captions == (("a striped flag", "three bands of colour"), ("red over blue",),
                             ("a grey square",), ("a see-through square",))
    assert data.labels.tolist() == [-1] * 4 and data.labels.dtype == torch.long
    assert data.class_names == () and data.prompts == ()
    info = data.info
    assert (info.name, info.channels, info.image_size, info.num_classes) == ("captions", 3, 24, 0)
    assert info.mean == pytest.approx(data.images.double().div(255).mean((0, 2, 3)).tolist())
    assert data.images[2].unique().tolist() == [90] and data.images[3].unique().tolist() == [60]
    image, label = data[1]
    assert torch.equal(image, data.images[1]) and label.item() == -1
    images, labels = data.__getitems__([3, 0])
    assert torch.equal(images, data.images[[3, 0]]) and labels.tolist() == [-1, -1]


def test_the_shorter_side_is_resized_then_the_centre_kept(folder):
    path = _write(folder / "pairs.tsv", [("images/wide.png", "wide"),
                                         ("images/tall.png", "tall")])
    same = load_caption_file(path, image_size=24)
    wide = same.images[0]  # 24x48 at 24: no resize, columns 12..35 are the green middle half
    assert (wide.permute(1, 2, 0) == torch.tensor(GREEN, dtype=torch.uint8)).all()
    tall = same.images[1]  # 40x24 at 24: rows 8..31 of red over blue, the top row red
    assert tall[:, 0, 0].tolist() == list(RED) and tall[:, -1, -1].tolist() == list(BLUE)
    assert (tall[:, :12] == torch.tensor(RED)[:, None, None]).all()
    smaller = load_caption_file(path, image_size=12).images
    assert smaller.shape == (2, 3, 12, 12)
    middle = smaller[0, :, :, 3:9].int()  # resized 12x24, then its central 12 columns
    assert (middle - torch.tensor(GREEN)[:, None, None]).abs().max() <= 2
    assert smaller[1, 0, 0, 0] > 150 and smaller[1, 2, -1, 0] > 150  # red top, blue bottom


def test_reads_a_csv_with_quoted_commas_absolute_paths_and_other_columns(folder):
    absolute = str(folder / "images" / "tall.png")
    path = folder / "train.csv"
    path.write_text(
        "id,title,filepath\n"
        '1,"a flag, in three colours",images/wide.png\n'
        f'2,"red ""on top""",{absolute}\n', encoding="utf-8")
    data = load_caption_file(path, image_size=16)
    assert data.captions == (("a flag, in three colours",), ('red "on top"',))
    assert data.images[1, :, 0, 0].tolist() == list(RED)


def test_other_column_names(folder):
    path = _write(folder / "mine.tsv", [("a dog", "images/wide.png")], header=("caption", "image"))
    data = load_caption_file(path, image_size=8, image_key="image", caption_key="caption")
    assert data.captions == (("a dog",),) and data.images.shape == (1, 3, 8, 8)
    with pytest.raises(ValueError, match=r"no column 'filepath'"):
        load_caption_file(path)


def test_a_missing_column_names_the_file_and_the_columns(folder):
    path = _write(folder / "train.tsv", [("images/wide.png", "x")], header=("filepath", "text"))
    with pytest.raises(ValueError) as error:
        load_caption_file(path)
    message = str(error.value)
    assert str(path) in message and "line 1" in message and "'title'" in message
    assert "'filepath', 'text'" in message
    # a comma-separated file named .tsv reads as one column: the header shows it
    wrong = folder / "comma.tsv"
    wrong.write_text("filepath,title\nimages/wide.png,x\n")
    with pytest.raises(ValueError, match=r"columns: 'filepath,title' \(separator '\\t'\)"):
        load_caption_file(wrong)


@pytest.mark.parametrize(("row", "error", "message"), [
    (("images/none.png", "a ghost"), DatasetUnavailableError,
     r"line 3: image .*none\.png not found"),
    (("images/text.png", "no picture"), ValueError, r"line 3: cannot read image .*text\.png"),
    (("images/wide.png", "   "), ValueError, r"line 3: empty caption in column 'title'"),
    (("", "nothing"), ValueError, r"line 3: empty image path in column 'filepath'"),
    (("images/wide.png",), ValueError, r"line 3: the row has fewer fields than the header"),
])
def test_a_bad_row_is_named_by_file_and_line(folder, row, error, message):
    (folder / "images" / "text.png").write_text("not an image")
    path = _write(folder / "train.tsv", [("images/tall.png", "fine"), row])
    with pytest.raises(error, match=message) as raised:
        load_caption_file(path)
    # one wording for every error of a row, an image's included (issue 39)
    assert str(raised.value).startswith(f"caption file {path}, line 3: ")


@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])
@pytest.mark.parametrize("offset", [60, 9000])  # inside and past the 8 kB read at once
def test_a_byte_that_is_not_utf8_is_named_by_file_and_line(folder, offset, bom):
    lines = [b"filepath\ttitle"]
    while sum(len(line) + 1 for line in lines) < offset:
        lines.append(f"images/wide.png\tcaption number {len(lines)}".encode())
    lines += [b"images/tall.png\tcaf\xff au lait", b"images/wide.png\tlast"]
    path = folder / "train.tsv"
    path.write_bytes(bom + b"\n".join(lines) + b"\n")
    with pytest.raises(ValueError) as raised:
        load_caption_file(path)
    assert str(raised.value) == (f"caption file {path}, line {len(lines) - 1}: not UTF-8 text "
                                 f"(byte 0xff); save the file as UTF-8")


def test_a_folder_where_a_caption_file_or_an_image_should_be_is_called_a_folder(folder):
    (folder / "train.tsv").mkdir()
    with pytest.raises(ValueError, match=r"caption file .*train\.tsv is a folder; expected a "
                                         r"\.tsv file") as raised:
        load_caption_split(folder, "train")
    assert not isinstance(raised.value, DatasetUnavailableError)
    (folder / "images" / "folder.png").mkdir()
    path = _write(folder / "test.tsv", [("images/wide.png", "fine"),
                                        ("images/folder.png", "a folder")])
    with pytest.raises(ValueError, match=r"test\.tsv, line 3: image .*folder\.png is a folder; "
                                         r"expected an image file") as raised:
        load_caption_file(path)
    assert "not found" not in str(raised.value)


def test_an_image_the_file_system_will_not_let_be_read_is_a_file_access_error(folder,
                                                                              monkeypatch):
    """No permission to read an image is the file system's fault, not the caption file's: the
    command line exits with 1 for it (issue 39; root ignores chmod, so PIL is told to refuse)."""
    from PIL import Image

    real_open = Image.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith("tall.png"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Image, "open", refuse)
    path = _write(folder / "train.tsv", [("images/wide.png", "fine"), ("images/tall.png", "x")])
    with pytest.raises(FileAccessError, match=r"train\.tsv, line 3: cannot read image "
                                              r".*tall\.png \(Permission denied\)"):
        load_caption_file(path)


def test_bad_files(folder):
    with pytest.raises(ValueError, match=r"must end in \.tsv .* or \.csv"):
        load_caption_file(folder / "train.txt")
    with pytest.raises(DatasetUnavailableError, match=r"caption file .*absent\.tsv not found"):
        load_caption_file(folder / "absent.tsv")
    (folder / "empty.tsv").write_text("")
    with pytest.raises(ValueError, match=r"empty\.tsv is empty: it needs a header row"):
        load_caption_file(folder / "empty.tsv")
    _write(folder / "header.tsv", [])
    with pytest.raises(ValueError, match=r"header\.tsv has a header but no rows"):
        load_caption_file(folder / "header.tsv")
    with pytest.raises(ValueError, match=r"image_size must be a positive integer, got 0"):
        load_caption_file(folder / "header.tsv", image_size=0)


def test_registered_as_captions_reading_the_split_files(folder):
    _write(folder / "train.tsv", [("images/wide.png", "wide"), ("images/tall.png", "tall")])
    _write(folder / "test.csv", [("images/gray.png", "grey")], separator=",")
    train = load_dataset("captions", "train", root=folder)
    test = load_dataset("captions", "test", root=folder)
    assert train.captions == (("wide",), ("tall",)) and test.captions == (("grey",),)
    assert train.images.shape == (2, 3, 96, 96)
    assert load_caption_split(folder, "test", image_size=8).images.shape == (1, 3, 8, 8)
    augment = augmentation_for("captions", 96)
    assert augment.flip_p == 0.0 and augment.hue == 0.0 and augment.grayscale_p == 0.0
    assert augment.saturation == 0.0 and augment.crop_scale[0] >= 0.8


def test_the_registered_split_files_are_named_when_missing_or_doubled(folder):
    with pytest.raises(DatasetUnavailableError) as error:
        load_dataset("captions", "test", root=folder)
    assert str(folder / "test.tsv") in str(error.value)
    assert str(folder / "test.csv") in str(error.value)
    _write(folder / "train.tsv", [("images/wide.png", "wide")])
    _write(folder / "train.csv", [("images/wide.png", "wide")], separator=",")
    with pytest.raises(ValueError, match=r"caption files .*train\.tsv and .*train\.csv both "
                                         r"exist"):
        load_dataset("captions", "train", root=folder)
    with pytest.raises(ValueError, match=r"split must be 'train' or 'test' for captions"):
        load_dataset("captions", "val", root=folder)


# CaptionedImages checks its parts.

def _info(num_classes=2):
    return DatasetInfo("t", 3, 4, num_classes, (0.5,) * 3, (0.2,) * 3)


def _parts(count=3):
    images = torch.zeros(count, 3, 4, 4, dtype=torch.uint8)
    captions = [("a cat",), ["a dog", "a brown dog"], ("a cat and a dog",)][:count]
    return images, captions, torch.tensor([0, 1, -1][:count])


def test_captioned_images_holds_its_parts():
    images, captions, labels = _parts()
    data = CaptionedImages(images, captions, labels, _info(), class_names=["cat", "dog"],
                           prompts=["a photo of a {}."])
    assert data.captions == (("a cat",), ("a dog", "a brown dog"), ("a cat and a dog",))
    assert data.class_names == ("cat", "dog") and data.prompts == ("a photo of a {}.",)
    unlabelled = CaptionedImages(images, captions, torch.full((3,), -1), _info(0))
    assert unlabelled.class_names == () and len(unlabelled) == 3


@pytest.mark.parametrize(("change", "message"), [
    ({"captions": [("a",), ("b",)]}, r"captions must hold one entry per image \(3\), got 2"),
    ({"captions": [("a",), (), ("c",)]}, r"captions\[1\] must hold at least one caption"),
    ({"captions": [("a",), ("b", " "), ("c",)]}, r"captions\[1\] must hold non-empty strings"),
    ({"captions": ["a", ("b",), ("c",)]}, r"captions\[0\] must be a sequence of strings"),
    ({"captions": "abc"}, r"captions must hold one sequence of strings per image"),
    ({"labels": torch.tensor([0, 2, -1])}, r"labels must lie in \[-1, len\(class_names\)\) = "
                                           r"\[-1, 2\), got 2"),
    ({"labels": torch.tensor([0, -2, -1])}, r"labels must be -1 \(no label\) or a class index"),
    ({"labels": torch.tensor([0, 1])}, r"labels must have shape \(3,\)"),
    ({"class_names": ["cat", "cat"]}, r"class_names must be distinct"),
    ({"class_names": ["cat", ""]}, r"class_names must hold non-empty strings"),
    ({"class_names": ["cat", "dog", "owl"]}, r"info.num_classes must equal len\(class_names\) "
                                             r"= 3, got 2"),
    ({"prompts": ["a photo of a cat."]}, r'each prompt must contain "\{\}" exactly once'),
    ({"prompts": ["a {} and a {}"]}, r'each prompt must contain "\{\}" exactly once'),
    ({"prompts": "a {}"}, r"prompts must be a sequence of strings, not one string"),
    ({"images": torch.zeros(3, 3, 4, 4)}, r"images must be a uint8 tensor"),
])
def test_captioned_images_rejects_bad_parts(change, message):
    images, captions, labels = _parts()
    parts = {"images": images, "captions": captions, "labels": labels, "info": _info(),
             "class_names": ["cat", "dog"], "prompts": ["a photo of a {}."], **change}
    with pytest.raises(ValueError, match=message):
        CaptionedImages(**parts)
