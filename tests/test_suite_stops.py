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


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_a_test_run_after_tests_that_handle_signals(tmp_path):
    started = tmp_path / "waiting"
    waiter = tmp_path / "test_waits.py"
    waiter.write_text(
        "import pathlib, time\n\n\n"
        "def test_waits():\n"
        f"    pathlib.Path({str(started)!r}).write_text('1')\n"
        "    time.sleep(600)\n")
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
         *HANDLER_TESTS, str(waiter)],
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
    assert process.returncode != 0, output  # killed by the signal (-15), not finished
