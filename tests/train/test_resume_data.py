"""A run resumed on a training set of another size is refused in one line naming data_dir and
both sizes (the size sets an epoch's steps, so the learning-rate schedule and the batches),
before anything of the run changes; the same data moved to another data_dir resumes."""

import hashlib
import shutil

import pytest

from contrastkit.cli import main
from contrastkit.data import DATASETS
from contrastkit.data.registry import DatasetSpec
from contrastkit.data.vision import load_imagefolder
from contrastkit.train import pretrain
from tests.data.archives import write_image_folder
from tests.train.test_resume import Killed, kill_after
from tests.train.tiny import tiny_config
from tests.train.tiny_captions import tiny_image_text_config

pytestmark = pytest.mark.usefixtures("no_curves")


def write_caption_folder(folder, count: int) -> None:
    """``folder/train.tsv`` with ``count`` images and their captions, and a small test split."""
    from PIL import Image

    folder.mkdir(parents=True)
    for split, images in (("train", count), ("test", 8)):
        rows = ["filepath\ttitle"]
        for i in range(images):
            colour = (20 * i % 256, 255 - 20 * i % 256, 90)
            Image.new("RGB", (40, 36), colour).save(folder / f"{split}{i}.png")
            rows.append(f"{split}{i}.png\ta picture in colour {colour}")
        (folder / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def run_files(run_dir) -> dict:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in run_dir.iterdir() if path.is_file() and path.name != ".lock"}


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_a_captions_run_resumed_on_a_folder_of_more_images_is_refused(tmp_path, capsys):
    small, large, moved = tmp_path / "small", tmp_path / "large", tmp_path / "moved"
    write_caption_folder(small, 16)
    write_caption_folder(large, 32)
    config = tiny_image_text_config(tmp_path / "runs", dataset="captions", data_dir=str(small),
                                    batch_size=8, epochs=2)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    before = run_files(config.run_dir)
    assert main(["pretrain", f"runs_dir={config.runs_dir}", "name=tiny", f"data_dir={large}",
                 "--resume"]) == 2
    [line] = error_lines(capsys)
    assert line.startswith("contrastkit pretrain: error: cannot resume on other data")
    assert f"trained on 16 images (dataset=captions, data_dir={small})" in line
    assert f"data_dir={large} holds 32" in line
    assert f"resume with data_dir={small}, or start the run again with --overwrite" in line
    assert run_files(config.run_dir) == before
    shutil.copytree(small, moved)  # the same data elsewhere: resumes
    resumed = pretrain(config.with_overrides({"data_dir": str(moved)}), resume="last")
    assert [epoch["epochs_completed"] for epoch in resumed.history] == [1, 2]


def test_an_image_folder_run_resumed_after_images_were_added_is_refused(tmp_path, monkeypatch):
    original = DATASETS.get("imagefolder")  # read at 16 pixels, for speed
    monkeypatch.setitem(DATASETS._entries, "imagefolder", DatasetSpec(
        load=lambda root, split, download: load_imagefolder(root, split, image_size=16),
        augmentation=original.augmentation))
    data = tmp_path / "images"
    write_image_folder(data, classes=2, per_class=4)
    config = tiny_config(tmp_path / "runs", dataset="imagefolder", data_dir=str(data),
                         batch_size=4, epochs=2)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    before = run_files(config.run_dir)
    write_image_folder(data, classes=2, per_class=5)  # one more image of each class
    with pytest.raises(ValueError, match=r"trained on 8 images \(dataset=imagefolder, "
                                         r"data_dir=.*\) and it holds 10 now.*restore the "
                                         r"run's data, or .* overwrite=True"):
        pretrain(config, resume="last")
    assert run_files(config.run_dir) == before
