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
parameters non-finite at the step, except under fp16's GradScaler, which skips such steps
(which is normal and not divergence).

**Collapse.** After every epoch the loop counts the consecutive epochs whose embeddings have
collapsed (their in-batch negative-pair similarity mean above 0.9:
:func:`~contrastkit.train.monitoring.is_collapsed`). Each such epoch's progress line says so
(:func:`collapse_note`), the first time at length; when the count reaches
``collapse_patience`` (and ``stop_on_collapse`` is on) the run stops after that epoch's
checkpoint with :class:`TrainingCollapsed`, whose one-line message advises a lower learning
rate, a longer warm-up or a smaller batch. It is a :class:`TrainingDiverged`, so whatever
handles divergence (the command's exit status 1) handles it too; unlike divergence, its
checkpoints are kept, so the run can be resumed with ``stop_on_collapse=false``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import shlex
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch

from contrastkit import distributed
from contrastkit.interrupts import note_received

if TYPE_CHECKING:
    from .checkpoint import EpochState
    from .config import PretrainConfig

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingStopped(Exception):
    """Training stopped on a signal after writing a checkpoint; ``signal_number`` says which."""

    def __init__(self, message: str, signal_number: int) -> None:
        super().__init__(message)
        self.signal_number = signal_number


class TrainingDiverged(RuntimeError):
    """Training met a NaN or infinity and stopped without writing it to a checkpoint.
    ``epoch`` (counted from 1) and ``step`` say where, ``part`` what went non-finite."""

    def __init__(self, message: str, epoch: int, step: int, part: str) -> None:
        super().__init__(message)
        self.epoch, self.step, self.part = epoch, step, part


class NonFiniteData(ValueError):
    """The training data held a NaN or infinity: the batch of step ``step`` of epoch
    ``epoch`` (both counted from 1), at its ``rows`` (this process's rows of the batch), which
    are the dataset's items ``items``. A ``ValueError``: bad input, not a diverged run."""

    def __init__(self, message: str, epoch: int, step: int, rows: list[int],
                 items: list[int]):
        super().__init__(message)
        self.epoch, self.step, self.rows, self.items = epoch, step, rows, items


def non_finite_rows(batch: torch.Tensor) -> list[int]:
    """The rows of ``batch`` (its first axis) that hold a NaN or infinity; none for a batch of
    integers (images in ``uint8``)."""
    if not batch.is_floating_point() or not batch.numel():
        return []
    finite = torch.isfinite(batch.detach().reshape(batch.shape[0], -1)).all(dim=1)
    return (~finite).nonzero().flatten().tolist()


def _listed(numbers: list[int], most: int = 5) -> str:
    shown = ", ".join(map(str, numbers[:most]))
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


def non_finite_data(batch: torch.Tensor, items: list[int] | None, epoch: int, step: int,
                    steps: int, saved: str) -> NonFiniteData | None:
    """The :class:`NonFiniteData` of a step (``step`` of ``steps`` of ``epoch``, from 1) whose
    input ``batch`` holds a NaN or infinity, or ``None`` when it is finite. ``items``: the
    dataset's indices of the batch's rows; ``saved``: what became of the run folder."""
    rows = non_finite_rows(batch)
    if not rows:
        return None
    found = [items[row] for row in rows] if items is not None else []
    where = f"dataset item{'s' if len(rows) > 1 else ''} {_listed(found)}, " if found else ""
    return NonFiniteData(
        f"the training data contains non-finite values (NaN or infinity): {where}"
        f"row{'s' if len(rows) > 1 else ''} {_listed(rows)} of the {batch.shape[0]} of the "
        f"batch of step {step}/{steps} of epoch {epoch}, found when that step failed; {saved}. "
        f"Fix or drop those items in your dataset (e.g. torch.nan_to_num, or leave them out), "
        f"then train again", epoch, step, rows, found)


class TrainingCollapsed(TrainingDiverged):
    """Training stopped because the embeddings stayed collapsed for ``epochs_collapsed``
    consecutive epochs, the last one ``epoch`` (counted from 1), after that epoch's
    checkpoint. A :class:`TrainingDiverged` (``part``: ``"the embeddings (collapsed)"``)."""

    def __init__(self, message: str, epoch: int, step: int, epochs_collapsed: int):
        super().__init__(message, epoch, step, "the embeddings (collapsed)")
        self.epochs_collapsed = epochs_collapsed


def collapse_note(epochs_collapsed: int, config: PretrainConfig) -> str:
    """What an epoch's progress line adds when it is the ``epochs_collapsed``-th collapsed
    epoch in a row (nothing for a healthy epoch, 0); ``config`` gives the threshold's
    patience and whether the run stops."""
    from .monitoring import COLLAPSE_NEG_SIM_MEAN

    if not epochs_collapsed:
        return ""
    stops = config.stop_on_collapse
    if epochs_collapsed == 1:
        then = (f"the run stops if it stays so for {config.collapse_patience} epochs "
                f"(collapse_patience)" if stops else "training on (stop_on_collapse=false)")
        return (f"COLLAPSED: negative pairs' similarity mean above {COLLAPSE_NEG_SIM_MEAN}, "
                f"the embeddings are nearly one point; {then}")
    return (f"COLLAPSED ({epochs_collapsed} epochs in a row"
            + (f", stopping at {config.collapse_patience})" if stops else ")"))


def collapsed_stop(metrics: dict, epochs_collapsed: int, config: PretrainConfig, steps: int,
                   run_dir: Path) -> TrainingCollapsed:
    """The :class:`TrainingCollapsed` of a run stopped after the epoch of ``metrics``, the
    ``epochs_collapsed``-th collapsed one in a row (``steps`` optimizer steps an epoch)."""
    from .monitoring import COLLAPSE_NEG_SIM_MEAN

    last = metrics["epochs_completed"]
    first = last - epochs_collapsed + 1
    warmup = (f"warmup_share, now {config.warmup_share}" if config.warmup_share is not None
              else f"warmup_epochs, now {config.warmup_epochs}, or warmup_share")
    message = (
        f"training collapsed: the in-batch negative-pair similarity mean stayed above "
        f"{COLLAPSE_NEG_SIM_MEAN} for {epochs_collapsed} epochs in a row (epochs {first}-{last}"
        f" of {config.epochs}; {metrics['neg_sim_mean']:.4f}, variance "
        f"{metrics['neg_sim_var']:.4f}, in epoch {last}): the embeddings are nearly one point. "
        f"Stopped after epoch {last}, whose checkpoint in {run_dir} is kept. Try a lower "
        f"base_lr (now {config.peak_base_lr}: peak lr {config.lr:.4g} at batch "
        f"{config.batch_size}), a longer warm-up ({warmup}) or a smaller batch_size "
        f"({steps} optimizer step{'s' if steps != 1 else ''} an epoch now); to train on "
        f"anyway, stop_on_collapse=false (with --resume, it continues this run)")
    return TrainingCollapsed(message, last, steps, epochs_collapsed)


def state_buffers(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, buffer)`` of each buffer of ``model`` that is part of its state (its
    ``state_dict``; e.g. BatchNorm's running statistics), not the constants a model registers
    as non-persistent (e.g. a transformer's causal mask of ``-inf``)."""
    for prefix, module in model.named_modules():
        for name, buffer in module.named_buffers(recurse=False):
            if name not in module._non_persistent_buffers_set:
                yield f"{prefix}.{name}" if prefix else name, buffer


def all_finite(loss: float, model: torch.nn.Module, device: torch.device) -> bool:
    """Whether ``loss`` and every floating parameter and state buffer (:func:`state_buffers`)
    of ``model`` are finite, in every process (one fused max-abs reduction and one
    synchronization)."""
    buffers = (buffer for _, buffer in state_buffers(model))
    tensors = [t.detach() for t in itertools.chain(model.parameters(), buffers)
               if t.is_floating_point()]
    largest = torch.stack(torch._foreach_norm(tensors, math.inf)).max()
    bad = (~torch.isfinite(largest)).float() + float(not math.isfinite(loss))
    if distributed.world_size() > 1:
        bad = distributed.all_reduce_max(bad.reshape(1).to(device))
    return not bool(bad.sum().item())


def non_finite_part(loss: float, model: torch.nn.Module, gradients: bool) -> str:
    """What is non-finite, in the order things go wrong in a step: the loss, a gradient (when
    ``gradients``: not under fp16's GradScaler), a parameter, a buffer; e.g. ``"parameter
    backbone.conv.weight"``. ``"another process's state"`` when all of this process's are
    finite."""
    if not math.isfinite(loss):
        return f"the loss ({loss})"
    named: list[tuple[str, Iterable[tuple[str, torch.Tensor | None]]]] = []
    if gradients:
        named.append(("the gradient of", ((n, p.grad) for n, p in model.named_parameters())))
    named += [("parameter", model.named_parameters()), ("buffer", state_buffers(model))]
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
    previous: dict[Any, Any] = {number: signal.getsignal(number) for number in STOP_SIGNALS}

    def note(number: int, frame: FrameType | None) -> None:
        received.append(number)
        note_received(number)
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


def stopped_by(signal_number: int, state: EpochState, steps: int, run_dir: Path
               ) -> TrainingStopped:
    """The :class:`TrainingStopped` of a run stopped by ``signal_number`` after step
    ``state.step`` of ``steps`` of epoch ``state.epoch`` (an ``EpochState``), with a checkpoint
    in ``run_dir``, saying how to continue it."""
    return TrainingStopped(
        f"training stopped by {signal.Signals(signal_number).name} after step {state.step}/"
        f"{steps} of epoch {state.epoch + 1}, with a checkpoint in {run_dir}; continue it with "
        f"`contrastkit pretrain {shlex.quote(f'runs_dir={run_dir.parent}')} "
        f"{shlex.quote(f'name={run_dir.name}')} --resume` (the "
        f"run's saved settings are kept)", signal_number)
