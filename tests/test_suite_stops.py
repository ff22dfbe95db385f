"""The test suite stops on SIGTERM (what ``timeout`` and CI runners send): no test leaves a
signal handler behind that swallows it. A pytest run in a subprocess runs tests that install
handlers (the command line's, a training run's stop on a signal), then a test that waits; SIGTERM
then ends the run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Tests that install signal handlers while they run.
HANDLER_TESTS = (
    "tests/test_cli.py",
    "tests/train/test_resume.py::test_a_signal_mid_epoch_checkpoints_that_step_and_stops")


def _waiting_tests(folder: Path, started: Path, after: Path) -> Path:
    """A test file whose first test waits for a stop signal inside contrastkit's handlers, as a
    command or a training run under test does, and turns it into a clean return; the second
    test marks that it ran."""
    path = folder / "test_waits.py"
    path.write_text(
        "import pathlib, time\n"
        "import torch\n"
        "from contrastkit.interrupts import Stopped, sigterm_stops\n"
        "from contrastkit.train.stopping import stop_requests\n\n\n"
        "def test_a_command_turns_the_signal_into_an_exit():\n"
        "    try:\n"
        "        with sigterm_stops():\n"
        f"            pathlib.Path({str(started)!r}).write_text('1')\n"
        "            time.sleep(600)\n"
        "    except Stopped:\n"
        "        pass\n\n\n"
        "def test_a_training_run_stops_on_it():\n"
        "    with stop_requests(torch.device('cpu')) as requested:\n"
        f"        pathlib.Path({str(started)!r}).write_text('1')\n"
        "        while not requested():\n"
        "            time.sleep(0.05)\n\n\n"
        "def test_after():\n"
        f"    pathlib.Path({str(after)!r}).write_text('1')\n")
    return path


def _sleeping_test(folder: Path) -> tuple[Path, Path]:
    """A file marking that its one test started, and that test file: the test marks it, then
    sleeps for ten minutes."""
    started, waiter = folder / "waiting", folder / "test_waits.py"
    waiter.write_text(
        "import pathlib, time\n\n\n"
        "def test_waits():\n"
        f"    pathlib.Path({str(started)!r}).write_text('1')\n"
        "    time.sleep(600)\n")
    return started, waiter


def _run_until_started(arguments: list[str], started: Path) -> tuple[int, str]:
    """Run pytest on ``arguments``; SIGTERM once ``started`` exists; its exit status and
    output."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), *arguments],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 600
        while not started.is_file():
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "the waiting test never started"
            time.sleep(0.2)
        process.terminate()  # SIGTERM
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            pytest.fail("the test run ignored SIGTERM")
    return process.returncode, output


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_a_test_run_after_tests_that_handle_signals(tmp_path):
    started, waiter = _sleeping_test(tmp_path)
    code, output = _run_until_started([*HANDLER_TESTS, str(waiter)], started)
    assert code != 0, output  # killed by the signal (-15), not finished


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("test", ["test_a_command_turns_the_signal_into_an_exit",
                                  "test_a_training_run_stops_on_it"])
def test_sigterm_taken_by_contrastkit_s_handler_still_stops_the_run(tmp_path, test):
    """The signal arrives while a test runs inside contrastkit's handler, which turns it into
    a clean exit: the run stops after that test (tests/stop_on_signal.py) instead of going on."""
    started, after = tmp_path / "waiting", tmp_path / "after"
    path = _waiting_tests(tmp_path, started, after)
    code, output = _run_until_started([f"{path}::{test}", f"{path}::test_after"], started)
    assert code != 0, output
    assert "stopped by SIGTERM" in output, output
    assert not after.exists(), output


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_the_readme_s_command_under_timeout_stops_when_the_time_is_up(tmp_path):
    """The README's test command (two xdist workers) run as CI runners and users run it,
    under ``timeout``: when the time is up, SIGTERM ends the whole run (its workers too) within
    seconds, although a test still waits and others installed handlers before it."""
    started, waiter = _sleeping_test(tmp_path)
    limit = 60
    command = ["timeout", "-s", "TERM", str(limit), sys.executable, "-m", "pytest", "-n", "2",
               "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c",
               str(ROOT / "pyproject.toml"), *HANDLER_TESTS, str(waiter)]
    begin = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        output, _ = process.communicate(timeout=limit + 60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        pytest.fail(f"the test run outlived its timeout of {limit} s by a minute")
    assert started.is_file(), output  # the waiting test was running when time was up
    assert process.returncode == 124, output  # timeout's status: it stopped the run
    assert time.monotonic() - begin < limit + 30
    time.sleep(2)
    left = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True)
    if left.stdout:
        os.killpg(process.pid, 9)
    assert left.stdout == "", "a worker of the run outlived it"
