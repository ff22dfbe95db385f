"""``reproduce`` stopped by SIGINT (Ctrl-C) or SIGTERM (``timeout``, a scheduler) while a
pretrain cell trains: one line saying to rerun the same command, exit status 128 + the
signal's number, the running cell checkpointed, and the same command again finishes the sweep
from there (with one job and with ``--jobs 2``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, recipe, write_recipe
from tests.processes import alive

SRC = Path(__file__).resolve().parents[2] / "src"
STOPPED = "contrastkit reproduce: stopped; rerun the same command to resume"


def _command(path: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "contrastkit", "reproduce", str(path), "--out", str(out),
            "--jobs", str(jobs), "--no-progress"]


def _environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}


def _start(path: Path, out: Path, jobs: int, ready: str, count: int = 1,
           output=subprocess.PIPE) -> subprocess.Popen:
    """The sweep of ``path`` started with ``jobs`` jobs, once ``count`` files of its cells
    match ``ready`` (a glob under ``out``)."""
    process = subprocess.Popen(_command(path, out, jobs), env=_environment(), stdout=output,
                               stderr=output, text=True)
    deadline = time.monotonic() + 240
    while len(list(out.glob(ready))) < count:
        if process.poll() is not None:
            pytest.fail(f"the sweep exited: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no cell wrote {ready}")
        time.sleep(0.2)
    return process


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("jobs, number", [(1, signal.SIGTERM), (1, signal.SIGINT),
                                          (2, signal.SIGTERM)])
def test_a_stopped_sweep_says_so_in_one_line_and_the_same_command_finishes_it(
        tmp_path, jobs, number):
    content = recipe(PRETRAIN, claims=[])
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 40})
    path = write_recipe(tmp_path, content)
    out = tmp_path / "out"
    process = _start(path, out, jobs, "cells/*/seed-0/last.pt")  # an epoch was saved
    try:
        process.send_signal(number)
        _, err = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + number, err
    assert err.strip().splitlines() == [STOPPED], err
    assert not list(out.glob("cells/*/seed-0/result.json"))
    saved = list(out.glob("cells/*/seed-0/last.pt"))
    assert saved  # the running cells checkpointed

    finished = subprocess.run(_command(path, out, jobs), env=_environment(),
                              capture_output=True, text=True, timeout=1200)
    assert finished.returncode == 0, finished.stderr
    assert len(list(out.glob("cells/*/seed-0/result.json"))) == 2


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stopped_simulation_sweep_says_so_in_one_line(tmp_path, jobs):
    """The same one line and exit status when the signal comes while a simulation runs."""
    content = recipe(SIMULATE, claims=[])
    content["base"]["steps"] = 10**8  # far longer than the test waits
    path = write_recipe(tmp_path, content)
    out = tmp_path / "out"
    process = _start(path, out, jobs, "cells/*/seed-0/cell.json")  # the cell started
    try:
        time.sleep(2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines() == [STOPPED], err
    assert not list(out.glob("cells/*/seed-0/result.json"))


def _children(pid: int) -> list[int]:
    listed = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(line) for line in listed.split()]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_workers_of_a_sweep_killed_with_sigkill_die_with_it(tmp_path):
    """``contrastkit reproduce --jobs 2`` killed with SIGKILL (no handler runs: what a
    scheduler's hard stop does) leaves none of its processes behind: both workers and
    multiprocessing's resource tracker end too."""
    content = recipe(PRETRAIN, claims=[])
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 40})
    path = write_recipe(tmp_path, content)
    out = tmp_path / "out"
    process = _start(path, out, 2, "cells/*/seed-0/last.pt", count=2,  # both workers train
                     output=subprocess.DEVNULL)
    children = []
    try:
        children = _children(process.pid)
        assert len(children) >= 2, children
        process.kill()
        process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(alive(child) for child in children):
            assert time.monotonic() < deadline, (
                f"{[c for c in children if alive(c)]} outlived the sweep")
            time.sleep(0.1)
    finally:
        for child in [process.pid, *children]:
            if alive(child):
                os.kill(child, signal.SIGKILL)


@pytest.mark.signals
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_sweep_started_with_sigint_ignored_stops_on_it_between_cells(tmp_path, monkeypatch,
                                                                       capsys):
    """A shell script's ``cmd &`` starts the sweep with SIGINT ignored; SIGINT then still
    stops it, as it stops ``pretrain``: here it comes after the first of two cells has
    finished, and the second never starts. SIGINT is ignored again afterwards."""
    from contrastkit.cli import main
    from contrastkit.experiments import runner

    content = recipe(SIMULATE, claims=[])
    content["base"]["steps"] = 10
    path = write_recipe(tmp_path, content)
    out = tmp_path / "out"
    real_run_cell, ran = runner.run_cell, []

    def run_cell_then_sigint(cell, folder):
        result = real_run_cell(cell, folder)
        ran.append(cell.seed)
        signal.raise_signal(signal.SIGINT)  # to this thread: delivered at once
        return result

    monkeypatch.setattr(runner, "run_cell", run_cell_then_sigint)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = main(["reproduce", str(path), "--out", str(out), "--seeds", "2",
                     "--no-progress"])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 128 + signal.SIGINT
    assert capsys.readouterr().err.strip().splitlines() == [STOPPED]
    assert ran == [0] and len(list(out.glob("cells/*/seed-*/result.json"))) == 1
