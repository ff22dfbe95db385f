"""The scripts of examples/ run as a user runs them, each in its own process on tiny data that
the test writes (no download): a folder of PNG textures in class folders, and a CSV of
captioned images in open_clip's format. Each must exit 0 and print that it learned (a loss
that falls; kNN accuracy or retrieval recall above the untrained encoder's), and every script
is listed in examples/README.md and run here."""

from __future__ import annotations

import ast
import csv
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from contrastkit.data import load_captioned_shapes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: Every script of examples/, each run by a test below.
SCRIPTS = ("simclr_vrns_images.py", "clip_captions.py", "monitor_loop.py",
           "monitor_lightning.py", "grad_cache.py", "custom_loss.py")
TEXTURES = ("horizontal", "vertical", "checks", "flat")
#: The settings that make each image example train for a few seconds on the CPU.
TINY = ("--image-size", "16", "--epochs", "10", "--batch-size", "32")


def texture(kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """A ``size`` x ``size`` RGB image of stripes (horizontal or vertical), checks or a flat
    colour, in two random colours, with a random period and phase and pixel noise: the class
    is the pattern, which SimCLR's crops and colour jitter keep, and not the colours."""
    y, x = np.mgrid[0:size, 0:size].astype(float)
    period, phase = rng.uniform(3, 6), rng.uniform(0, 2 * np.pi)
    rows, columns = np.sin(2 * np.pi * y / period + phase), np.sin(2 * np.pi * x / period + phase)
    wave = {"horizontal": rows, "vertical": columns, "checks": rows * columns,
            "flat": np.zeros((size, size))}[kind]
    low, high = rng.uniform(0, 255, (2, 3))
    image = low + (high - low) * (wave[..., None] + 1) / 2 + rng.normal(0, 10, (size, size, 3))
    return np.clip(image, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory) -> Path:
    """DATA/train/<texture>/*.png (40 a class) and DATA/val/<texture>/*.png (20 a class)."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for split, count in (("train", 40), ("val", 20)):
        for kind in TEXTURES:
            folder = root / split / kind
            folder.mkdir(parents=True)
            for index in range(count):
                Image.fromarray(texture(kind, 16, rng)).save(folder / f"{index:03d}.png")
    return root


@pytest.fixture(scope="module")
def caption_files(tmp_path_factory) -> Path:
    """DATA/train.csv (128 images) and DATA/test.csv (32), three captions an image, with the
    images as PNGs under DATA/images/: the bundled captioned shapes, written as a user's
    files (docs/image-text.md, "Your own image–caption pairs")."""
    root = tmp_path_factory.mktemp("captions")
    (root / "images").mkdir()
    for split, count in (("train", 128), ("test", 32)):
        shapes = load_captioned_shapes(split, count=count)
        with open(root / f"{split}.csv", "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["filepath", "title"])
            for index in range(count):
                path = f"images/{split}-{index:03d}.png"
                Image.fromarray(shapes.images[index].permute(1, 2, 0).numpy()).save(root / path)
                writer.writerows([path, caption] for caption in shapes.captions[index])
    return root


def run_example(script: str, *arguments, cwd: Path, status: int = 0) -> subprocess.CompletedProcess:
    """Run ``python examples/<script> ARGUMENTS`` in ``cwd`` with this checkout's package, on
    the CPU (Lightning and ``--device auto`` would take a GPU) with one thread; check its exit
    status."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                       os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, arguments)],
                            cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == status, result.stdout + result.stderr
    return result


def fell(first: float, last: float) -> bool:
    """Whether a loss fell from ``first`` to ``last`` by more than 10 % of its size: more than
    the noise of a run that does not learn (its epochs' losses differ by their batches and
    views alone)."""
    return last < first - 0.1 * abs(first)


def loss_fell(out: str) -> bool:
    """Whether the printed ``loss: first epoch A, last epoch B`` :func:`fell`."""
    found = re.search(r"^loss: first epoch (\S+), last epoch (\S+)$", out, re.M)
    assert found, out
    return fell(float(found[1]), float(found[2]))


def test_simclr_vrns_on_an_image_folder_beats_the_untrained_encoder(image_folder, tmp_path):
    out = run_example("simclr_vrns_images.py", "--data", image_folder, *TINY,
                      "--backbone", "small_cnn_strided", "--knn-k", "10", "--device", "cpu",
                      "--runs", tmp_path,
                      cwd=tmp_path).stdout
    assert loss_fell(out), out
    found = re.search(r"kNN top-1 on 80 val images: untrained (\S+) %, trained (\S+) %", out)
    assert found, out
    assert float(found[2]) > float(found[1])
    assert (tmp_path / "my-images-simclr-vrns" / "metrics.jsonl").is_file()


def test_clip_on_a_caption_file_retrieves_better_than_untrained(caption_files, tmp_path):
    out = run_example("clip_captions.py", "--data", caption_files, "--image-size", "32",
                      "--epochs", "10", "--batch-size", "32", cwd=tmp_path).stdout
    assert loss_fell(out), out
    assert "retrieval on 32 test images and 96 captions" in out
    recalls = dict(re.findall(r"^  (\w+)\s+untrained\s+\S+, trained\s+(\S+), chance", out, re.M))
    before = dict(re.findall(r"^  (\w+)\s+untrained\s+(\S+),", out, re.M))
    assert set(recalls) == {"image_to_text_r1", "image_to_text_r5", "text_to_image_r1",
                            "text_to_image_r5"}
    for key in ("image_to_text_r5", "text_to_image_r5"):
        assert float(recalls[key]) > float(before[key]), out


def test_the_monitor_in_a_plain_loop_reports_windows_as_the_loss_falls(image_folder, tmp_path):
    out = run_example("monitor_loop.py", "--data", image_folder, *TINY, "--log-every", "10",
                      cwd=tmp_path).stdout
    windows = [line.split() for line in out.splitlines() if re.match(r"^\s*\d+\s", line)]
    assert [int(window[0]) for window in windows] == [10, 20, 30, 40, 50]
    assert fell(float(windows[0][1]), float(windows[-1][1])), out  # a window's mean loss
    assert out.splitlines()[-1].startswith("warnings: ")


def test_the_monitor_in_lightning_logs_its_windows(image_folder, tmp_path):
    out = run_example("monitor_lightning.py", "--data", image_folder, *TINY,
                      "--log-every", "10", "--logs", tmp_path / "logs", cwd=tmp_path).stdout
    assert loss_fell(out), out
    assert "last window, at step 50: positive_mean " in out
    logged = re.search(r"monitor windows logged to (\S+)$", out, re.M)
    assert logged, out
    with open(logged[1]) as file:
        rows = [row for row in csv.DictReader(file) if row.get("similarity/positive_mean")]
    assert [float(row["step"]) for row in rows] == [10, 20, 30, 40, 50]


def test_grad_cache_trains_a_batch_larger_than_its_chunks(image_folder, tmp_path):
    out = run_example("grad_cache.py", "--data", image_folder, "--image-size", "16",
                      "--epochs", "10", "--batch-size", "128", "--chunk-size", "32",
                      cwd=tmp_path).stdout
    assert "batch 128 in chunks of 32, optimizer steps per epoch: 1" in out
    assert loss_fell(out), out


def test_a_custom_loss_is_checked_then_trained_by_its_registered_name(image_folder, tmp_path):
    out = run_example("custom_loss.py", "--data", image_folder, *TINY, "--runs", tmp_path,
                      "--device", "cpu", cwd=tmp_path).stdout
    assert "__main__.AlignUniform: every property holds" in out
    assert "FAIL" not in out
    assert loss_fell(out), out
    assert "loss: align_uniform" in (tmp_path / "my-images-align-uniform" / "config.yaml"
                                     ).read_text()


def test_every_example_is_listed_described_and_run():
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(SCRIPTS)
    listing = (EXAMPLES / "README.md").read_text()
    for script in SCRIPTS:
        assert f"({script})" in listing, f"examples/README.md does not link {script}"
        docstring = ast.get_docstring(ast.parse((EXAMPLES / script).read_text()))
        assert docstring and "--data DATA" in docstring, f"{script}: how to run it on your data"


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_missing_data_folder_is_one_line_naming_it(script, tmp_path, monkeypatch, capsys):
    """Run in this process (the scripts stop before any training): exit status 2 and one line
    on standard error, as argparse reports a bad option."""
    from contrastkit.losses.registry import LOSSES

    monkeypatch.setattr(LOSSES, "_entries", dict(LOSSES._entries))  # custom_loss registers one
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [script, "--data", str(tmp_path / "no-such-folder")])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{script}: error: "), lines
    assert "no-such-folder" in lines[0]
