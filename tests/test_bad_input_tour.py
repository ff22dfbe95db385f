"""A scripted tour of bad input to the ``contrastkit`` command line.

Each case runs ``contrastkit.cli.main`` in-process in an empty working folder holding the
files of :func:`_fixtures` and asserts: the exit code (2 for usage errors), no traceback, a
message on stderr of at most two lines holding every expected fragment (the setting or file it
names and what was expected), and no file created or left behind.

Adding a case is one line in ``CASES``: ``case(id, command line, exit code, *fragments)``. In the
command line and the fragments, ``{tmp}`` is the working folder; ``{cifar10_url}`` the official
CIFAR-10 URL. No case reaches the network: torchvision's download fails as it does offline.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pytest

from contrastkit.cli import main

PRETRAIN = "pretrain runs_dir={tmp}/runs"


def case(name: str, command: str, code: int, *fragments: str):
    return pytest.param(command, code, fragments, id=name)


CASES = [
    case("geometry-text-file", "geometry {tmp}/strings.txt", 2,
         "strings.txt", ".npy", ".npz", ".pt"),
    case("geometry-junk-pt", "geometry {tmp}/junk.pt", 2, "junk.pt", "not a readable .pt"),
    case("geometry-junk-npy", "geometry {tmp}/junk.npy", 2, "junk.npy", "not a readable .npy"),
    case("geometry-junk-labels", "geometry {tmp}/views.npy --labels {tmp}/junk.npy", 2,
         "junk.npy"),
    case("geometry-missing", "geometry {tmp}/none.npy", 2, "no such file", "none.npy"),
    case("geometry-nan-npz", "geometry {tmp}/nan.npz", 2, "nan.npz", "'features'", "NaN",
         "row 2"),
    case("geometry-empty-npz", "geometry {tmp}/empty.npz", 2, "empty.npz", "'u'",
         "no embeddings"),
    case("geometry-folder", "geometry {tmp}/empty", 2, "is a folder", ".npy"),
    case("geometry-plot-unwritable", "geometry {tmp}/views.npy --plot {tmp}/afile/h.png", 2,
         "--plot", "afile"),
    case("geometry-json-unwritable", "geometry {tmp}/views.npy --json {tmp}/afile/r.json", 2,
         "--json", "afile"),
    case("geometry-plot-is-folder", "geometry {tmp}/views.npy --plot {tmp}", 2,
         "--plot", "folder"),
    case("geometry-bins-huge", "geometry {tmp}/views.npy --plot h.png --bins 100000000", 2,
         "--bins", "10000"),
    case("geometry-bins-zero", "geometry {tmp}/views.npy --plot h.png --bins 0", 2, "--bins"),
    case("simulate-out-under-file", "simulate --steps 2 --out {tmp}/afile/out", 2,
         "--out", "afile"),
    case("simulate-out-is-file", "simulate --steps 2 --plot --out {tmp}/afile", 2,
         "--out", "is a file"),
    case("phase-out-under-file", "simulate sigmoid-phase --steps 2 --out {tmp}/afile/p", 2,
         "--out", "afile"),
    case("pretrain-device", PRETRAIN + " device=potato", 2, "device", "potato", "cpu"),
    case("pretrain-runs-dir-is-a-file", "pretrain runs_dir={tmp}/afile", 2,
         "runs_dir", "afile"),
    case("pretrain-malformed-yaml", "pretrain {tmp}/broken.yaml", 2, "broken.yaml", "line 2"),
    case("pretrain-ignored-setting", PRETRAIN + " loss=siglip temperature=0.5", 2,
         "temperature=0.5", "ignored", "siglip_scale"),
    case("pretrain-unknown-key", PRETRAIN + " lerning_rate=0.1", 2, "lerning_rate"),
    case("pretrain-resume-missing", PRETRAIN + " --resume name=nothing", 2,
         "cannot resume", "nothing"),
    case("evaluate-missing-run", "evaluate {tmp}/runs/nothing", 2, "nothing"),
    case("pretrain-download-offline",
         PRETRAIN + " dataset=cifar10 download=true data_dir={tmp}/data", 2,
         "download", "{cifar10_url}", "cifar-10-python.tar.gz", "{tmp}/data"),
    case("pretrain-empty-archive", PRETRAIN + " dataset=cifar10 data_dir={tmp}/empty", 2,
         "{tmp}/empty/cifar-10-python.tar.gz"),
    case("pretrain-no-data", PRETRAIN + " dataset=cifar10 data_dir={tmp}/nothing", 2,
         "cifar-10-python.tar.gz", "{tmp}/nothing"),
]


def _fixtures(tmp: Path) -> None:
    """The input files the cases refer to."""
    (tmp / "afile").write_text("a regular file, not a folder\n")
    (tmp / "strings.txt").write_text("first line\nsecond line\n")
    (tmp / "junk.pt").write_text("a b c\n")
    (tmp / "junk.npy").write_text("1 2 3\n")
    np.save(tmp / "views.npy", np.random.default_rng(0).standard_normal((2, 8, 4)))
    features = np.random.default_rng(1).standard_normal((8, 4))
    features[2, 1] = np.nan
    np.savez(tmp / "nan.npz", features=features, labels=np.arange(8) % 2)
    np.savez(tmp / "empty.npz", u=np.zeros((0, 4)), v=np.zeros((0, 4)))
    (tmp / "empty").mkdir()
    (tmp / "empty" / "cifar-10-python.tar.gz").write_bytes(b"")
    (tmp / "broken.yaml").write_text("loss: simclr\nepochs: 5: 6\n")


def _files(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def run_cli(argv: list[str]) -> int:
    """``main(argv)``'s exit code, also when argparse exits."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


@pytest.fixture
def offline(monkeypatch):
    import torchvision.datasets.utils

    def fail(url, *args, **kwargs):
        raise URLError("Temporary failure in name resolution")

    monkeypatch.setattr(torchvision.datasets.utils, "download_url", fail)


def _run_case(command, code, fragments, tmp_path, monkeypatch, capsys):
    """Run one case and check its exit code and message; return the files before and after."""
    from torchvision.datasets import CIFAR10

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _fixtures(tmp_path)
    before = _files(tmp_path)
    values = {"tmp": str(tmp_path), "cifar10_url": CIFAR10.url}
    assert run_cli(shlex.split(command.format(**values))) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    lines = captured.err.strip().splitlines()
    assert 1 <= len(lines) <= 2, captured.err
    for fragment in fragments:
        assert fragment.format(**values) in captured.err
    return before, _files(tmp_path)


@pytest.mark.parametrize("command, code, fragments", CASES)
def test_bad_input_is_one_clear_message(command, code, fragments, tmp_path, monkeypatch,
                                        capsys, offline):
    before, after = _run_case(command, code, fragments, tmp_path, monkeypatch, capsys)
    assert after == before
