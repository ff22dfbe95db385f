"""Where a sweep's cells run: one after another in this process, in ``jobs`` long-lived worker
processes that split the cores, or as submitit jobs (SLURM on a cluster)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

from contrastkit.interrupts import STOP_SIGNALS, stop_once_on_signals, stop_signal
from contrastkit.threads import (
    chosen_threads,
    environment,
    job_environment,
    threads_per_job,
)

from .recipe import Cell

LAUNCHERS = ("local", "submitit")
Task = tuple[Cell, Path]  # a cell and the sweep folder it runs under
Started = Callable[[Task], None]  # told when a task's cell starts
RunCell = Callable[[Cell, Path], dict]  # runs a cell in its folder under a sweep folder


def check_launch(jobs: int, launcher: str) -> None:
    """``jobs`` is a count >= 1 and ``launcher`` a known one, whose package is installed."""
    from contrastkit.checks.scalars import check_choice, check_count

    check_count("jobs", jobs, 1)
    check_choice("launcher", launcher, LAUNCHERS)
    if launcher == "submitit":
        try:
            import submitit  # noqa: F401
        except ImportError:
            raise ValueError("launcher submitit needs the submitit package: "
                             "pip install 'contrastkit[launch]'") from None


@contextlib.contextmanager
def launch(tasks: list[Task], run: RunCell, jobs: int, launcher: str, started: Started,
           timeout_min: int = 60) -> Iterator[Iterator[tuple[Task, dict]]]:
    """A block that iterates over each task of ``tasks`` and its cell's result (``run(cell,
    out)``, a module-level function, so that worker processes can import it), as they finish;
    ``timeout_min`` is a submitit job's time limit. When the block ends early (an error, or a
    stop: Ctrl-C, or SIGTERM raising :class:`contrastkit.interrupts.Stopped`), the worker
    processes are stopped too (:func:`_stop_workers`) before it is left."""
    if launcher == "submitit":
        yield _run_submitit(tasks, run, started, timeout_min)
    elif jobs == 1:
        yield _run_inline(tasks, run, started)
    else:
        with _process_pool(tasks, run, jobs, started) as results:
            yield results


def _run_inline(tasks: list[Task], run: RunCell, started: Started
                ) -> Iterator[tuple[Task, dict]]:
    """The cells one after another in this process, each dataset loaded once."""
    from contrastkit.data import cached_datasets

    with cached_datasets():
        for task in tasks:
            started(task)
            yield task, run(*task)


@contextlib.contextmanager
def _process_pool(tasks: list[Task], run: RunCell, jobs: int, started: Started
                  ) -> Iterator[Iterator[tuple[Task, dict]]]:
    """The cells in ``jobs`` long-lived worker processes (``spawn``), which import torch and
    load each dataset once and split the cores free when the sweep starts
    (:func:`contrastkit.threads.threads_per_job` threads each, waiting threads asleep); a
    worker dies with this process (:func:`start_worker`). The first failure cancels the cells
    not yet started and is raised (the running ones finish and keep their results); a stop is
    passed on to the running cells, which checkpoint and stop (:func:`_stop_workers`)."""
    threads = threads_per_job(jobs, chosen_threads())  # the cores free now, unless set
    with environment(job_environment(threads)):
        pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"),
                                   initializer=start_worker, initargs=(threads,))
        running: dict = {}

        def results() -> Iterator[tuple[Task, dict]]:
            queue = list(tasks)
            while queue or running:
                while queue and len(running) < jobs:  # submitted only when a worker is free
                    task = queue.pop(0)
                    started(task)
                    running[pool.submit(run, *task)] = task
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    task = running.pop(future)
                    yield task, future.result()

        try:
            yield results()
        except BaseException as error:
            _stop_workers(pool, stop_signal(error))
            raise
        pool.shutdown()


def _stop_workers(pool: ProcessPoolExecutor, number: int | None) -> None:
    """End ``pool`` after an error or a stop in this process: cancel the cells not yet started
    and wait for the running ones. On a stop by signal ``number`` (SIGINT or SIGTERM), first
    pass it on to the workers, which may not have had it (``kill`` or a scheduler's SIGTERM
    reaches this process alone): as the *other* of the two signals, because the terminal's
    Ctrl-C or a scheduler may have signalled them already, and a pretraining run takes a
    second signal of the same kind for "stop at once", but SIGTERM after SIGINT (or the
    reverse) for the same request; a running pretrain cell then checkpoints at its step and
    stops. A second stop while waiting ends the workers at once (SIGKILL): what they lose is
    the steps since their last checkpoint."""
    workers = list(getattr(pool, "_processes", None) or {})  # pids; the executor's own table
    if number in STOP_SIGNALS:
        other = signal.SIGTERM if number == signal.SIGINT else signal.SIGINT
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, other)
    try:
        pool.shutdown(wait=True, cancel_futures=True)
    except BaseException:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def start_worker(threads: int) -> None:
    """A sweep worker's set-up: it dies with its parent (Linux), stops once on the first
    SIGINT or SIGTERM (:func:`contrastkit.interrupts.stop_once_on_signals`), runs ``threads``
    CPU threads (its environment already says so, before torch loads) and keeps each dataset
    it loads."""
    from contrastkit.data import cached_datasets

    _die_with_parent()
    stop_once_on_signals()
    import torch

    torch.set_num_threads(threads)
    cached_datasets().__enter__()  # for the worker's lifetime


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (``PR_SET_PDEATHSIG``), so a sweep
    killed by a scheduler leaves no worker behind; elsewhere, nothing."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request was made
        os._exit(1)


def _run_submitit(tasks: list[Task], run: RunCell, started: Started, timeout_min: int
                  ) -> Iterator[tuple[Task, dict]]:
    """Each cell as a submitit job, all submitted at once; results as the jobs finish. A job
    cut off by its time limit leaves a checkpoint: running the sweep again resumes it.
    (One executor folder per sweep folder: ``OUT/submitit``.)"""
    from submitit.helpers import as_completed

    jobs = {}
    executors = {}
    for task in tasks:
        cell, out = task
        if out not in executors:
            executors[out] = submitit_executor(out / "submitit", timeout_min)
        started(task)
        jobs[executors[out].submit(run, cell, out)] = task
    for job in as_completed(list(jobs), poll_frequency=1):
        yield jobs[job], job.result()


def submitit_executor(folder: Path, timeout_min: int):
    """The submitit executor of the cells' jobs: ``submitit.AutoExecutor(folder)``, which
    submits SLURM jobs where SLURM is available and runs local processes elsewhere, each
    with a time limit of ``timeout_min`` minutes. (To set a partition or GPUs, replace this
    function by one that also calls ``update_parameters``.)"""
    import submitit

    executor = submitit.AutoExecutor(folder=folder)
    executor.update_parameters(timeout_min=timeout_min)
    return executor
