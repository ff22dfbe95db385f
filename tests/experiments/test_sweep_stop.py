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

SRC = Path(__file__).resolve().parents[2] / "src"
STOPPED = "contrastkit reproduce: stopped; rerun the same command to resume"


def _command(path: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "contrastkit", "reproduce", str(path), "--out", str(out),
            "--jobs", str(jobs), "--no-progress"]


def _environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}


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
    process = subprocess.Popen(_command(path, out, jobs), env=_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while next(out.glob("cells/*/seed-0/last.pt"), None) is None:  # an epoch was saved
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no cell saved a checkpoint"
            time.sleep(0.2)
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
    process = subprocess.Popen(_command(path, out, jobs), env=_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while next(out.glob("cells/*/seed-0/cell.json"), None) is None:  # the cell started
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no cell started"
            time.sleep(0.2)
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


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


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
    process = subprocess.Popen(_command(path, out, 2), env=_environment(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = []
    try:
        deadline = time.monotonic() + 240
        while len(list(out.glob("cells/*/seed-0/last.pt"))) < 2:  # both workers train
            assert process.poll() is None, "the sweep exited"
            assert time.monotonic() < deadline, "the cells saved no checkpoint"
            time.sleep(0.2)
        children = _children(process.pid)
        assert len(children) >= 2, children
        process.kill()
        process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(_alive(child) for child in children):
            assert time.monotonic() < deadline, (
                f"{[c for c in children if _alive(c)]} outlived the sweep")
            time.sleep(0.1)
    finally:
        for child in [process.pid, *children]:
            if _alive(child):
                os.kill(child, signal.SIGKILL)
