"""A graceful stop on SIGTERM or SIGINT: finish the step, write a checkpoint, stop.

Cluster schedulers (SLURM, Kubernetes) send SIGTERM a while before they kill a job, and Ctrl-C
sends SIGINT. While :func:`~contrastkit.train.pretrain` runs, either signal only sets a flag;
the loop looks at it after every step, checkpoints at that step and raises
:class:`TrainingStopped`, so ``--resume`` continues from exactly there. Under torch.distributed
the flag is combined over processes, so a signal that reaches any of them stops all of them at
the same step. A second signal of the same kind acts as it normally would (SIGINT raises
``KeyboardInterrupt``, SIGTERM terminates), for a user who wants out at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

import torch

from contrastkit import distributed

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingStopped(Exception):
    """Training stopped on a signal after writing a checkpoint; ``signal_number`` says which."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.signal_number = signal_number


@contextlib.contextmanager
def stop_requests(device: torch.device) -> Iterator[Callable[[], int]]:
    """Catch SIGTERM and SIGINT for the duration of the block (their previous handlers come
    back after it). Yields ``requested()``: the number of the signal received by this or (under
    torch.distributed) any process, or 0. Outside the main thread, where Python cannot install
    handlers, nothing is caught and ``requested()`` is always 0."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: 0
        return
    received: list[int] = []
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}

    def note(number, frame):
        received.append(number)
        signal.signal(number, previous[number])  # the next one acts as usual

    for number in STOP_SIGNALS:
        signal.signal(number, note)
    try:
        yield lambda: _agreed(received[0] if received else 0, device)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _agreed(number: int, device: torch.device) -> int:
    """The largest signal number over processes (one tiny all-reduce per step under
    torch.distributed, so that every process stops after the same step)."""
    if distributed.world_size() == 1:
        return number
    return int(distributed.all_reduce_max(torch.tensor([number], device=device)).item())
