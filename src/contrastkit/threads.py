"""CPU threads that do not fight other work: the OpenMP settings of every process contrastkit
starts or runs in, and how parallel jobs share the cores.

PyTorch's CPU operators run on OpenMP threads. By default (GNU OpenMP, which PyTorch's Linux
wheels use) a thread that finishes its share of an operator *spins* on its core for a while
before it sleeps, waiting for the next operator. On an idle machine that saves a wake-up per
operator; beside another CPU-bound process (a second sweep, a test run, a browser) the spinning
threads take the cores the other work needs, and both slow down many times over
(docs/benchmarks.md, section "threads", measures it).

Three rules; the first two are applied before PyTorch is imported (OpenMP reads its
environment once, when the library loads):

- **Waiting threads sleep** (``OMP_WAIT_POLICY=PASSIVE``) in every process that contrastkit's
  command line runs or starts, unless the user has chosen a wait policy
  (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME`` set). The wait policy changes
  no result: the same threads compute the same sums in the same order.
- **Parallel jobs split the cores**: ``jobs`` processes on ``cores`` cores get
  ``max(1, cores // jobs)`` threads each (:func:`threads_per_job`), so their threads never
  outnumber the cores; a sweep counts only the cores free when it starts (:func:`free_cores`).
- **A run takes the free cores**: ``pretrain`` on the CPU computes with the cores that other
  processes leave free when it starts (:func:`chosen_threads`), unless the user set
  ``OMP_NUM_THREADS``: beside one CPU-bound process on 2 cores, one thread on the free core
  instead of two fighting for both.

The thread count does change float rounding (the reductions are split differently), so a
sweep's thread count is recorded beside its results.

A Python user who calls contrastkit from their own process sets these themselves, before
``import torch``::

    import os
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")   # before torch is imported
    import torch

or from the shell, ``OMP_WAIT_POLICY=PASSIVE python train.py`` (and ``OMP_NUM_THREADS=1`` for
each of several processes that run at once on a small machine).

This module imports neither torch nor numpy.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, MutableMapping

#: Variables by which a user chooses how OpenMP threads wait (GNU, standard, Intel OpenMP).
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: Variables that set a process's number of CPU threads (OpenMP, and MKL's own pool).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the system has one,
    else ``os.cpu_count()``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def busy_cores(sample_seconds: float = 0.1) -> float | None:
    """How many of the machine's cores other processes keep busy: the share of CPU time not
    idle over ``sample_seconds`` (read from ``/proc/stat``), times the core count; ``None``
    where there is no ``/proc/stat`` (not Linux). The calling process sleeps meanwhile, so its
    own work is not counted."""
    def snapshot() -> tuple[int, int] | None:
        try:
            with open("/proc/stat") as stat:
                fields = [int(value) for value in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]), idle  # user .. steal; guest time is inside user already

    first = snapshot()
    time.sleep(sample_seconds)
    second = snapshot()
    if first is None or second is None or second[0] <= first[0]:
        return None
    total, idle = second[0] - first[0], second[1] - first[1]
    return (total - idle) / total * (os.cpu_count() or 1)


def free_cores(sample_seconds: float = 0.1) -> int:
    """The cores of :func:`usable_cores` that other processes leave free right now (at least
    1): the usable cores less the busy ones (:func:`busy_cores`, rounded), or all of them where
    the load cannot be read."""
    usable = usable_cores()
    busy = busy_cores(sample_seconds)
    if busy is None:
        return usable
    return max(1, min(usable, (os.cpu_count() or usable) - round(busy)))


def chosen_threads(environ: MutableMapping[str, str] | None = None) -> int | None:
    """The CPU threads a run should compute with when it starts: ``None`` when the user chose
    them (one of :data:`THREAD_VARIABLES` set in ``environ``, default ``os.environ``), else the
    cores free right now (:func:`free_cores`). Beside another CPU-bound process a run then
    takes the cores that are free instead of fighting for a busy one (OpenMP waits at every
    operator for its slowest thread); on an idle machine it takes them all, PyTorch's default.
    The count changes float rounding, not the result's meaning; it is recorded where results
    are."""
    environ = os.environ if environ is None else environ
    if any(environ.get(name) for name in THREAD_VARIABLES):
        return None
    return free_cores()


@contextlib.contextmanager
def run_threads(set_threads, get_threads) -> Iterator[int | None]:
    """Inside the block, ``set_threads(chosen_threads())`` unless the user chose the count
    (then nothing changes); the previous count (``get_threads()``) is restored after it, so a
    Python user's process keeps its own setting. Yields the count set, or ``None``. (Taking
    torch's setter and getter keeps this module free of torch.)"""
    chosen = chosen_threads()
    if chosen is None:
        yield None
        return
    before = get_threads()
    set_threads(chosen)
    try:
        yield chosen
    finally:
        set_threads(before)


def threads_per_job(jobs: int, cores: int | None = None) -> int:
    """The threads of each of ``jobs`` processes sharing ``cores`` cores (default: this
    process's :func:`usable_cores`): ``max(1, cores // jobs)``."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    return max(1, (usable_cores() if cores is None else cores) // jobs)


def quiet_openmp(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Make OpenMP threads sleep instead of spinning while they wait
    (``OMP_WAIT_POLICY=PASSIVE``) in ``environ`` (default ``os.environ``), unless one of
    :data:`WAIT_VARIABLES` is already set there (the user's choice wins). Returns what was
    set. Takes effect in a process only if called before PyTorch is first imported, and in the
    processes it starts afterwards."""
    environ = os.environ if environ is None else environ
    if any(name in environ for name in WAIT_VARIABLES):
        return {}
    environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return {"OMP_WAIT_POLICY": "PASSIVE"}


def job_environment(threads: int) -> dict[str, str]:
    """The variables of a worker process that runs with ``threads`` CPU threads beside other
    workers: ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and a passive wait policy (unless the
    user chose one, see :func:`quiet_openmp`)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    variables = {name: str(threads) for name in THREAD_VARIABLES}
    variables.update(quiet_openmp(dict(os.environ)))
    return variables


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``variables`` set inside the block (for the processes started
    there), restored after it."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
