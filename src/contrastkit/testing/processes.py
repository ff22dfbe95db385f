"""Run a function in ``W`` CPU processes joined in a gloo process group, and collect what each
returns.

The processes are forked where that is safe (Linux and macOS without a CUDA device), so the
function and what it reads (a loss defined in a notebook, a test or a script) need not be
importable. Elsewhere they are spawned and it must be picklable: on a machine with a CUDA
device, autograd runs a thread per device once anything has been differentiated, and a forked
process cannot use autograd at all (PyTorch refuses it: "Unable to handle autograd's threading
in combination with fork-based multiprocessing").

Each process reports to the parent once, its result or its error; the first error stops the
others, so a process that raised never leaves the rest waiting in a collective (a process that
raised waits for the parent to stop it, so that the error the parent reports is the first
cause, not the others' broken connections).
"""

from __future__ import annotations

import pickle
import queue
import socket
import time
import traceback
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

#: Seconds the processes may take in all (start, process group, work) before they are stopped.
TIMEOUT_S = 120.0


class ProcessFailed(RuntimeError):
    """A process raised, died or timed out; the message says which and why."""


def free_port() -> int:
    """A free local TCP port for the process group's rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_method() -> str:
    """``"fork"`` where the platform has it and no CUDA device makes it unsafe (see the module
    docstring), else ``"spawn"``."""
    if "fork" in mp.get_all_start_methods() and not torch.cuda.is_available():
        return "fork"
    return "spawn"


def run_processes(world_size: int, work: Callable[[], object],
                  timeout: float = TIMEOUT_S) -> list[object]:
    """``work()`` in each of ``world_size`` processes of one gloo group (``dist.get_rank()``
    tells a process which it is); what each returned (picklable), in rank order. Raises
    :class:`ProcessFailed` when a process raises (with its error), dies or runs past
    ``timeout`` seconds."""
    context = mp.get_context(start_method())
    reports = context.Queue()
    port = free_port()
    # every start method's context has Process; typeshed's BaseContext does not declare it
    processes = [context.Process(target=_process_main, daemon=True,  # type: ignore[attr-defined]
                                 args=(rank, world_size, port, work, reports, timeout))
                 for rank in range(world_size)]
    try:
        _start(processes)
        results = _collect(processes, reports, time.monotonic() + timeout)
    except ProcessFailed:
        for process in processes:  # the others may wait in a collective: stop them
            if process.pid is not None:
                process.terminate()
        raise
    finally:
        for process in processes:
            if process.pid is not None:
                process.join()
        reports.close()
    return results


def _start(processes: list) -> None:
    """Start the processes; a spawned process whose work cannot be pickled is a
    :class:`ProcessFailed` that says what to do."""
    try:
        for process in processes:
            process.start()
    except (AttributeError, TypeError, pickle.PicklingError) as error:  # spawn pickles the work
        why = ("a CUDA device: a forked process cannot use autograd"
               if "fork" in mp.get_all_start_methods() else "the platform cannot fork")
        raise ProcessFailed(
            f"the processes must be spawned on this machine ({why}), and what they run cannot "
            f"be pickled ({error}): define the loss at a module's top level, or pass a "
            "registered loss's name") from None


def _collect(processes: list, reports, deadline: float) -> list[object]:
    """Each process's result, until one fails or the deadline passes."""
    results: dict[int, object] = {}
    while len(results) < len(processes):
        try:
            rank, failed, payload = reports.get(timeout=0.1)
        except queue.Empty:
            for rank, process in enumerate(processes):
                if rank not in results and process.exitcode not in (None, 0):
                    raise ProcessFailed(f"process {rank} died (exit code "
                                        f"{process.exitcode})") from None
            if time.monotonic() > deadline:
                raise ProcessFailed("the processes ran out of time (a process waits in a "
                                    "collective that another never entered?)") from None
            continue
        if failed:
            raise ProcessFailed(f"process {rank} raised {payload}")
        results[rank] = payload
    return [results[rank] for rank in range(len(processes))]


def _process_main(rank: int, world_size: int, port: int, work: Callable[[], object],
                  reports, timeout: float) -> None:
    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=timeout))
        result = work()
    except Exception as error:  # reported to the parent, which names the process
        last = traceback.extract_tb(error.__traceback__)[-1]
        message = (str(error).splitlines() or [""])[0]
        reports.put((rank, True, f"{type(error).__name__}: {message} "
                                 f"({last.filename}, line {last.lineno})"))
        # Keep this process's connections open until the parent stops it: closing them would
        # make the others fail in their collective and perhaps report first, hiding the cause.
        time.sleep(timeout)
        return
    reports.put((rank, False, result))
    dist.destroy_process_group()
