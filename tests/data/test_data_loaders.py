"""The dataset loaders read the real on-disk formats; a missing dataset says how to get it."""

import tarfile
from urllib.error import URLError

import numpy as np
import pytest
import torch

from contrastkit.data import load_dataset
from tests.data.archives import (
    write_cifar10_archive,
    write_cifar100_archive,
    write_image_folder,
    write_stl10_folder,
)


def test_cifar10_reads_a_generated_archive_in_the_real_format(tmp_path):
    written = write_cifar10_archive(tmp_path, per_batch=3)
    train = load_dataset("cifar10", "train", root=tmp_path)
    test = load_dataset("cifar10", "test", root=tmp_path)
    assert len(train) == 15 and len(test) == 3
    assert train.images.dtype == torch.uint8 and train.images.shape == (15, 3, 32, 32)
    expected = written["train_data"].reshape(15, 3, 32, 32)
    np.testing.assert_array_equal(train.images.numpy(), expected)
    assert train.labels.tolist() == written["train_labels"]
    np.testing.assert_array_equal(test.images.numpy(), written["test_data"].reshape(3, 3, 32, 32))
    assert train.info.num_classes == 10 and train.info.image_size == 32
    assert (tmp_path / "cifar-10-batches-py").is_dir()  # the archive was extracted


def test_cifar100_reads_fine_labels_from_a_generated_archive(tmp_path):
    written = write_cifar100_archive(tmp_path, count=4)
    train = load_dataset("cifar100", "train", root=tmp_path)
    np.testing.assert_array_equal(train.images.numpy(), written["train_data"].reshape(4, 3, 32, 32))
    assert train.labels.tolist() == written["train_labels"] and train.info.num_classes == 100


def test_pixel_layout_is_red_plane_then_green_then_blue(tmp_path):
    written = write_cifar10_archive(tmp_path, per_batch=1)
    image = load_dataset("cifar10", "train", root=tmp_path).images[0]
    row = written["train_data"][0]
    assert image[0, 0, 1] == row[1] and image[1, 0, 0] == row[1024]
    assert image[2, 31, 31] == row[3071] and image[0, 1, 0] == row[32]


@pytest.mark.parametrize("name, archive", [("cifar10", "cifar-10-python.tar.gz"),
                                           ("cifar100", "cifar-100-python.tar.gz"),
                                           ("stl10", "stl10_binary.tar.gz")])
def test_missing_dataset_says_how_to_obtain_it(tmp_path, name, archive):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset(name, "train", root=tmp_path)
    message = str(error.value)
    assert archive in message and "download=true" in message and str(tmp_path) in message


def test_stl10_reads_the_binary_format(tmp_path):
    written = write_stl10_folder(tmp_path, count=4)
    train = load_dataset("stl10", "train", root=tmp_path)
    np.testing.assert_array_equal(train.images.numpy(), written["train_images"])
    assert train.labels.tolist() == written["train_labels"].tolist()
    both = load_dataset("stl10", "train+unlabeled", root=tmp_path)
    assert len(both) == 8 and both.labels[4:].tolist() == [-1] * 4
    assert train.info.image_size == 96


def test_image_folder_is_resized_and_labelled_by_folder(tmp_path):
    write_image_folder(tmp_path, classes=2, per_class=2, size=40)
    train = load_dataset("imagefolder", "train", root=tmp_path)
    assert len(train) == 4 and train.info.num_classes == 2
    image, label = train[3]
    assert image.shape == (3, 224, 224) and image.dtype == torch.uint8 and int(label) == 1
    assert len(load_dataset("imagefolder", "test", root=tmp_path)) == 4  # falls back to val/
    with pytest.raises(FileNotFoundError, match="one folder per class"):
        load_dataset("imagefolder", "train", root=tmp_path / "nowhere")


def test_lazily_loaded_image_folder_is_batched_item_by_item(tmp_path):
    from contrastkit.train.batches import batch_loader

    write_image_folder(tmp_path, classes=2, per_class=2, size=24)
    folder = load_dataset("imagefolder", "train", root=tmp_path)
    images, labels = next(iter(batch_loader(folder, [[0, 3], [1, 2]])))
    assert images.shape == (2, 3, 224, 224) and images.dtype == torch.uint8
    assert labels.tolist() == [0, 1]


def test_digits_split_is_fixed_disjoint_and_stratified():
    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    assert len(train) == 1437 and len(test) == 360
    assert train.images.shape[1:] == (1, 8, 8) and int(train.images.max()) == 255
    rows = {tuple(x.flatten().tolist()) for x in test.images}
    overlap = sum(tuple(x.flatten().tolist()) in rows for x in train.images)
    assert overlap < 10  # digits holds a few duplicate images; the index split is disjoint
    assert test.labels.bincount().min() >= 35
    assert torch.equal(load_dataset("digits", "test").images, test.images)


def test_unknown_dataset_and_split_are_errors():
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_dataset("mnist", "train")
    with pytest.raises(ValueError, match="split must be"):
        load_dataset("digits", "validation")


ARCHIVES = [("cifar10", "cifar-10-python.tar.gz", "cifar-10-batches-py"),
            ("cifar100", "cifar-100-python.tar.gz", "cifar-100-python"),
            ("stl10", "stl10_binary.tar.gz", "stl10_binary")]


def _offline(monkeypatch, error):
    """torchvision's download fails as it does without network (no test reaches the network)."""
    import torchvision.datasets.utils

    def fail(url, *args, **kwargs):
        raise error

    monkeypatch.setattr(torchvision.datasets.utils, "download_url", fail)


@pytest.mark.parametrize("error", [URLError("Name or service not known"),
                                   OSError(101, "Network is unreachable")])
@pytest.mark.parametrize("name, archive, folder", ARCHIVES)
def test_failed_download_says_where_to_put_the_archive_by_hand(
        tmp_path, monkeypatch, error, name, archive, folder):
    from torchvision import datasets

    _offline(monkeypatch, error)
    root = tmp_path / "data"
    with pytest.raises(ValueError) as raised:
        load_dataset(name, "train", root=root, download=True)
    message = str(raised.value)
    assert "download" in message and "failed" in message
    official = {"cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100,
                "stl10": datasets.STL10}[name].url
    assert archive in message and str(root) in message and official in message
    assert not root.exists()  # nothing left behind


def _junk_archive(root, archive, folder, kind):
    root.mkdir()
    path = root / archive
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "junk":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, 600, np.uint8).tobytes())
    else:  # a valid .tar.gz without the dataset's folder
        with tarfile.open(path, "w:gz") as tar:
            tar.add(__file__, arcname="unrelated.py")


@pytest.mark.parametrize("kind", ["empty", "junk", "wrong content"])
@pytest.mark.parametrize("name, archive, folder", ARCHIVES[:2])
def test_unreadable_archive_names_the_file_and_leaves_nothing(tmp_path, kind, name, archive,
                                                              folder):
    _junk_archive(tmp_path / "data", archive, folder, kind)
    with pytest.raises(ValueError) as raised:
        load_dataset(name, "train", root=tmp_path / "data")
    assert str(tmp_path / "data" / archive) in str(raised.value)
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [archive]


def test_unreadable_extracted_files_name_the_folder(tmp_path):
    write_cifar10_archive(tmp_path, per_batch=1)
    load_dataset("cifar10", "test", root=tmp_path)  # extracts
    (tmp_path / "cifar-10-batches-py" / "data_batch_2").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="cifar-10-batches-py"):
        load_dataset("cifar10", "train", root=tmp_path)


def test_download_is_skipped_when_the_archive_is_already_there(tmp_path, monkeypatch):
    _offline(monkeypatch, URLError("offline"))
    write_cifar10_archive(tmp_path, per_batch=1)
    assert len(load_dataset("cifar10", "test", root=tmp_path, download=True)) == 1
