"""The command line: help and the demo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contrastkit import cli, losses
from contrastkit.interrupts import Stopped


def test_help_lists_the_demo(capsys):
    assert cli.main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_demo_prints_every_loss_lower_at_the_optimum(capsys):
    assert cli.main(["demo", "--n", "6", "--d", "8"]) == 0
    out = capsys.readouterr().out
    every = losses.names(regularizers=True)
    rows = [line.split() for line in out.splitlines()[1:1 + len(every)]]
    names = [row[0] for row in rows]
    assert names == list(every)
    for row in rows:
        optimum, random = float(row[-2]), float(row[-1])
        assert optimum < random


def test_demo_bad_dimension_is_a_clear_error(capsys):
    assert cli.main(["demo", "--n", "6", "--d", "2"]) == 2
    assert "d must be >= n - 1" in capsys.readouterr().err


def test_module_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "contrastkit", "--version"], capture_output=True, text=True,
        check=True,
    )
    assert result.stdout.startswith("contrastkit ")


def _failing_demo(monkeypatch, error):
    from contrastkit.commands import demo

    def run(args):
        raise error

    monkeypatch.setattr(demo, "run", run)


def test_an_uncaught_os_error_is_one_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _failing_demo(monkeypatch, PermissionError(13, "Permission denied", "/some/out.json"))
    assert cli.main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err == "contrastkit demo: error: Permission denied: /some/out.json\n"


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied", "/x"),
                                   ValueError("bad value")])
def test_traceback_flag_and_debug_variable_let_errors_propagate(monkeypatch, error):
    _failing_demo(monkeypatch, error)
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    with pytest.raises(type(error)):
        cli.main(["--traceback", "demo"])
    monkeypatch.setenv("CONTRASTKIT_DEBUG", "1")
    with pytest.raises(type(error)):
        cli.main(["demo"])


def test_other_exceptions_are_bugs_and_keep_their_traceback(monkeypatch):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _failing_demo(monkeypatch, TypeError("a bug"))
    with pytest.raises(TypeError):
        cli.main(["demo"])


def test_a_missing_optional_package_is_one_line_naming_the_extra(monkeypatch, capsys):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _failing_demo(monkeypatch, ModuleNotFoundError("No module named 'mlxtend'", name="mlxtend"))
    assert cli.main(["demo"]) == 2
    assert capsys.readouterr().err == (
        "contrastkit demo: error: this needs mlxtend, which is not installed: pip install "
        "'contrastkit[data]' (or pip install mlxtend)\n")


def test_a_missing_module_of_no_extra_is_a_bug(monkeypatch):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _failing_demo(monkeypatch, ModuleNotFoundError("No module named 'nowhere'", name="nowhere"))
    with pytest.raises(ModuleNotFoundError):
        cli.main(["demo"])


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt(), 130), (Stopped(15), 143)])
def test_a_stop_is_one_line_and_128_plus_the_signal(monkeypatch, capsys, stop, status):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    _failing_demo(monkeypatch, stop)
    assert cli.main(["demo"]) == status
    assert capsys.readouterr().err == "contrastkit demo: stopped\n"


#: A program that runs ``contrastkit`` with the ``train`` extra's packages missing: their
#: imports fail as they would after a plain ``pip install .``.
WITHOUT_TRAIN_EXTRA = """
import importlib.abc, sys
BLOCKED = {"sklearn", "yaml", "matplotlib", "rich", "torchvision", "tensorboard"}
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from contrastkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["pretrain", "epochs=1", "progress=false", "runs_dir={tmp}"],
    ["reproduce", "--list"],
    ["simulate", "--n", "4", "--d", "3", "--steps", "2", "--plot", "--out", "{tmp}"],
])
def test_a_headline_command_without_the_train_extra_is_one_line(tmp_path, command):
    arguments = [part.replace("{tmp}", str(tmp_path)) for part in command]
    finished = subprocess.run([sys.executable, "-c", WITHOUT_TRAIN_EXTRA, *arguments],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert finished.returncode == 2, finished.stderr
    assert re.fullmatch(rf"contrastkit {command[0]}: error: this needs ([\w-]+), which is not "
                        rf"installed: pip install 'contrastkit\[train\]' \(or pip install "
                        rf"\1\)\n", finished.stderr), finished.stderr


def test_reading_a_config_and_the_version_loads_no_torch():
    """``contrastkit --version``, ``pretrain --help`` and reading a config stay instant: the
    config module (and its ``precision`` choices) imports nothing of torch."""
    code = ("import sys, contrastkit.train.config, contrastkit.cli; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(
        Path(__file__).resolve().parents[1] / "src")}).returncode == 0
