"""CPU threads that do not fight other work: the OpenMP wait policy of every process the
command line runs or starts, the cores split between parallel jobs, and workers that die with
their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from contrastkit import threads
from contrastkit.cli import main
from tests.processes import alive

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.mark.parametrize("chosen", threads.WAIT_VARIABLES)
def test_a_wait_policy_the_user_chose_is_kept(chosen):
    environ = {chosen: "ACTIVE" if chosen == "OMP_WAIT_POLICY" else "100"}
    assert threads.quiet_openmp(environ) == {}
    assert environ == {chosen: "ACTIVE" if chosen == "OMP_WAIT_POLICY" else "100"}


def test_otherwise_waiting_threads_sleep():
    environ = {"PATH": "/bin"}
    assert threads.quiet_openmp(environ) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert environ == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize(("jobs", "cores", "each"), [(1, 2, 2), (2, 2, 1), (3, 2, 1),
                                                      (2, 16, 8), (3, 16, 5), (1, 1, 1)])
def test_jobs_split_the_cores_and_never_outnumber_them(jobs, cores, each):
    assert threads.threads_per_job(jobs, cores) == each
    assert jobs * each <= max(cores, jobs)


def test_a_job_count_below_one_is_refused():
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        threads.threads_per_job(0, 2)


def test_a_jobs_environment_fixes_its_threads_and_wait_policy(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("KMP_BLOCKTIME", raising=False)
    assert threads.job_environment(1) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                          "OMP_WAIT_POLICY": "PASSIVE"}
    monkeypatch.setenv("GOMP_SPINCOUNT", "0")
    assert threads.job_environment(3) == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}


def test_the_environment_block_restores_what_was_there(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    with threads.environment({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}):
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ


def test_the_command_line_sets_the_passive_wait_policy_before_a_command_runs(monkeypatch,
                                                                            capsys):
    for name in threads.WAIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert main(["theory", "minibatch", "--n", "8", "--m", "2"]) == 0
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_a_command_line_process_runs_torch_with_the_passive_policy():
    """In a fresh ``contrastkit`` process, libgomp has read the passive policy: the variable is
    set in the process before torch loads (``python -m contrastkit`` imports no torch before
    the command runs)."""
    code = textwrap.dedent("""
        import os, sys
        from contrastkit.cli import main
        assert 'torch' not in sys.modules
        main(['theory', 'minibatch', '--n', '8', '--m', '2'])
        import torch
        print(os.environ.get('OMP_WAIT_POLICY'))
    """)
    environ = {key: value for key, value in os.environ.items()
               if key not in threads.WAIT_VARIABLES}
    environ["PYTHONPATH"] = str(SRC)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "PASSIVE"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sweep_worker_dies_when_its_parent_is_killed(tmp_path):
    """The parent (a stand-in for ``contrastkit reproduce --jobs 2``) starts the runner's
    worker pool, whose cell writes the worker's pid and sleeps; killing the parent with SIGKILL
    (what a scheduler does) must not leave the worker running."""
    pid_file = tmp_path / "worker.pid"
    parent = textwrap.dedent(f"""
        import os, time
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context
        from contrastkit.experiments import launchers

        def cell():
            open({str(pid_file)!r}, 'w').write(str(os.getpid()))
            time.sleep(300)

        if __name__ == '__main__':
            pool = ProcessPoolExecutor(1, mp_context=get_context('spawn'),
                                       initializer=launchers.start_worker, initargs=(1,))
            pool.submit(cell)
            time.sleep(300)
    """)
    script = tmp_path / "parent.py"
    script.write_text(parent)
    environ = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{tmp_path}"}
    process = subprocess.Popen([sys.executable, str(script)], env=environ, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.is_file() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the worker never started"
            assert process.poll() is None, "the parent exited"
            time.sleep(0.2)
        worker = int(pid_file.read_text())
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(worker):
            assert time.monotonic() < deadline, f"worker {worker} outlived its parent"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()




@pytest.mark.parametrize(("busy", "free"), [(0.0, 2), (0.3, 2), (0.9, 1), (1.2, 1), (2.0, 1),
                                            (None, 2)])
def test_a_run_takes_the_cores_other_processes_leave_free(monkeypatch, busy, free):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "busy_cores", lambda sample_seconds=0.1: busy)
    assert threads.free_cores() == free
    assert threads.chosen_threads({}) == free


@pytest.mark.parametrize("name", threads.THREAD_VARIABLES)
def test_threads_the_user_set_are_kept(name):
    assert threads.chosen_threads({name: "3"}) is None


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc/stat")
def test_a_spinning_process_is_counted_as_a_busy_core():
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert threads.busy_cores(0.5) >= 0.7  # other work can only add to it
    finally:
        spinner.kill()
        spinner.wait()


def test_pretrain_computes_with_the_free_cores_and_gives_the_count_back(tmp_path, monkeypatch):
    import torch

    from contrastkit.train import pretrain
    from tests.train.own_objects import Blobs, jitter, mlp
    from tests.train.test_own_inputs import config

    for name in threads.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    free = before + 1  # not the count the process has, so that the test sees the change
    monkeypatch.setattr(threads, "free_cores", lambda sample_seconds=0.1: free)
    during = []
    pretrain(config(tmp_path, epochs=1), encoder=mlp(), dataset=Blobs(), augment=jitter,
             callbacks=[lambda epoch, metrics: during.append(torch.get_num_threads())])
    assert during == [free] and torch.get_num_threads() == before
    monkeypatch.setenv("OMP_NUM_THREADS", str(before))  # the user's choice: left alone
    pretrain(config(tmp_path, epochs=1, name="chosen"), encoder=mlp(), dataset=Blobs(),
             augment=jitter,
             callbacks=[lambda epoch, metrics: during.append(torch.get_num_threads())])
    assert during == [free, before]
