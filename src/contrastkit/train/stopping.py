"""Stopping a run: gracefully on SIGTERM or SIGINT, and at once when it diverges.

**Signals.** Finish the step, write a checkpoint, stop.

Cluster schedulers (SLURM, Kubernetes) send SIGTERM a while before they kill a job, and Ctrl-C
sends SIGINT. While :func:`~contrastkit.train.pretrain` runs, either signal only sets a flag;
the loop looks at it after every step, checkpoints at that step and raises
:class:`TrainingStopped`, so ``--resume`` continues from exactly there. Under torch.distributed
the flag is combined over processes, so a signal that reaches any of them stops all of them at
the same step. A second signal of the same kind acts as it normally would (SIGINT raises
``KeyboardInterrupt``, SIGTERM terminates), for a user who wants out at once.

**Divergence.** After every optimizer step :func:`all_finite` checks the loss and every
parameter and buffer (one fused max-abs reduction, agreed over processes); on a NaN or infinity
the loop raises :class:`TrainingDiverged` before anything is written, so the checkpoints on
disk are those of the last finite state. :func:`non_finite_part` then names what went
non-finite. Gradients are not checked on their own: a non-finite gradient makes the
parameters non-finite at the step, except under AMP, where the GradScaler skips such steps
(which is normal and not divergence).
"""

from __future__ import annotations

import contextlib
import itertools
import math
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


class TrainingDiverged(RuntimeError):
    """Training met a NaN or infinity and stopped without writing it to a checkpoint.
    ``epoch`` (counted from 1) and ``step`` say where, ``part`` what went non-finite."""

    def __init__(self, message: str, epoch: int, step: int, part: str):
        super().__init__(message)
        self.epoch, self.step, self.part = epoch, step, part


def all_finite(loss: float, model: torch.nn.Module, device: torch.device) -> bool:
    """Whether ``loss`` and every floating parameter and buffer of ``model`` are finite, in
    every process (one fused max-abs reduction and one synchronization)."""
    tensors = [t.detach() for t in itertools.chain(model.parameters(), model.buffers())
               if t.is_floating_point()]
    largest = torch.stack(torch._foreach_norm(tensors, math.inf)).max()
    bad = (~torch.isfinite(largest)).float() + float(not math.isfinite(loss))
    if distributed.world_size() > 1:
        bad = distributed.all_reduce_max(bad.reshape(1).to(device))
    return not bool(bad.sum().item())


def non_finite_part(loss: float, model: torch.nn.Module, gradients: bool) -> str:
    """What is non-finite, in the order things go wrong in a step: the loss, a gradient (when
    ``gradients``: not under AMP's GradScaler), a parameter, a buffer; e.g. ``"parameter
    backbone.conv.weight"``. ``"another process's state"`` when all of this process's are
    finite."""
    if not math.isfinite(loss):
        return f"the loss ({loss})"
    named = []
    if gradients:
        named.append(("the gradient of", ((n, p.grad) for n, p in model.named_parameters())))
    named += [("parameter", model.named_parameters()), ("buffer", model.named_buffers())]
    for kind, tensors in named:
        for name, tensor in tensors:
            if tensor is not None and tensor.is_floating_point() and not tensor.isfinite().all():
                return f"{kind} {name}"
    return "another process's state"


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
