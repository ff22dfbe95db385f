"""Checkpoints: what a training state holds (:class:`EpochState`, :func:`training_state`,
:func:`restore_training_state`) and how it is written (``last.pt`` and the one before it,
``previous.pt``).

A checkpoint is written so that a kill at any instant leaves ``last.pt`` complete (once the
first one is written): the new checkpoint goes to a temporary file in the same folder
(``.last.pt.tmp``) and is flushed to disk; the old ``last.pt`` gets a second name (a hard link,
or a copy where the file system has none) that then replaces ``previous.pt``; only then does
the new file replace ``last.pt``, with ``os.replace``, in one step. A reader that finds no
``last.pt`` but a complete temporary file (the first write, or a write of an earlier
contrastkit stopped between its two renames) reads that one (:func:`load_checkpoint`), and
the next write puts it in place first. A checkpoint holding a non-finite number (NaN or
infinity) is never written, and never loaded.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from contrastkit.files import run_folder_io

from .optim import resume_scheduler

if TYPE_CHECKING:
    from torch import nn
    from torch.amp import GradScaler
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LambdaLR
    from torch.serialization import MAP_LOCATION

    from .config import PretrainConfig

LAST = "last.pt"
PREVIOUS = "previous.pt"
#: The checkpoint being written; it becomes last.pt once it is complete on disk.
WRITING = f".{LAST}.tmp"
#: last.pt's second name while it becomes previous.pt.
ROTATING = f".{PREVIOUS}.tmp"
#: Every file of a run folder that holds a checkpoint (or a part of one being written).
CHECKPOINT_FILES = (LAST, PREVIOUS, WRITING, ROTATING)
#: How the Python API (:func:`~.loop.pretrain`) and the command line (``contrastkit pretrain``)
#: name the options that an :class:`Advice` error advises; ``use`` takes a checkpoint's name.
API_OPTIONS = {"resume": 'resume="last"', "use": 'resume="{}"', "overwrite": "overwrite=True"}
CLI_OPTIONS = {"resume": "--resume", "use": "--resume {}", "overwrite": "--overwrite"}


class Advice(ValueError):
    """A ``ValueError`` that advises options in its caller's words. Its ``template`` holds
    ``<resume>``, ``<overwrite>`` and ``<use:previous>`` (resume from / load that checkpoint)
    where an option belongs; the message words them with ``options`` (the Python API's,
    :data:`API_OPTIONS`, unless given), and :meth:`advice` with another caller's
    (:data:`CLI_OPTIONS`, or ``evaluate``'s ``checkpoint="previous"``)."""

    def __init__(self, template: str, options: dict[str, str] | None = None):
        self.template, self.options = template, {**API_OPTIONS, **(options or {})}
        super().__init__(self.advice())

    def advice(self, options: dict[str, str] | None = None) -> str:
        """The message with the options worded by ``options`` (those not given: as raised)."""
        words = {**self.options, **(options or {})}
        return re.sub(r"<(\w+)(?::(\w+))?>",
                      lambda m: words[m[1]].format(m[2] or "") if m[1] in words else m[0],
                      self.template)

    def reworded(self, options: dict[str, str]) -> Advice:
        """The same error, raised in the words of ``options``."""
        return type(self)(self.template, {**self.options, **options})


def first_non_finite(state: object, prefix: str = "") -> str | None:
    """The key path (``"model.fc.weight"``) of the first NaN or infinity among the floating
    tensors and floats nested in ``state`` (dicts, lists, tuples), or ``None``."""
    if isinstance(state, torch.Tensor):
        finite = not state.is_floating_point() or bool(torch.isfinite(state).all())
        return None if finite else prefix
    if isinstance(state, float):
        return None if math.isfinite(state) else prefix
    if isinstance(state, dict):
        items: Iterable[tuple[object, object]] = state.items()
    elif isinstance(state, (list, tuple)):
        items = enumerate(state)
    else:
        return None
    for key, value in items:
        found = first_non_finite(value, f"{prefix}.{key}" if prefix else str(key))
        if found is not None:
            return found
    return None


def save_checkpoint(run_dir: Path, state: dict, rotate: bool = True) -> Path:
    """Write ``state`` as ``run_dir/last.pt``, keeping the old one as previous.pt
    (``rotate=False``: replace last.pt and keep previous.pt, for when last.pt is not known to
    be good, e.g. after resuming from previous.pt). A kill at any instant of the write leaves a
    complete last.pt, the old one or the new one (see the module's notes).

    A state holding a NaN or infinity is refused (``ValueError``) and nothing is written. A
    write that fails before the new checkpoint is complete on disk (disk full, ...) removes its
    temporary files, leaves both checkpoints as they were and raises :class:`RunFolderError`.
    """
    run_dir = Path(run_dir)
    last, writing, rotating = run_dir / LAST, run_dir / WRITING, run_dir / ROTATING
    bad = first_non_finite(state)
    if bad is not None:
        raise ValueError(f"refusing to write checkpoint {last}: {bad} is not finite")
    with run_folder_io("write checkpoint", last):
        os.makedirs(run_dir, exist_ok=True)
        if not os.path.isfile(last) and _complete_writing(run_dir) is not None:
            os.replace(writing, last)  # the latest checkpoint, left unrenamed by a kill
        try:
            with open(writing, "wb") as handle:
                torch.save(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
            if rotate and os.path.isfile(last):
                _second_name(last, rotating)
                os.replace(rotating, run_dir / PREVIOUS)
        except BaseException:
            for path in (writing, rotating):
                path.unlink(missing_ok=True)
            raise
        os.replace(writing, last)
        _sync_folder(run_dir)
    return last


def _second_name(path: Path, name: Path) -> None:
    """Give the file ``path`` the second name ``name`` (a file a kill left there is replaced): a
    hard link, or, where the file system has none, a copy flushed to disk."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name)
    try:
        os.link(path, name)
    except OSError:  # no hard links here (FAT, some network file systems)
        shutil.copyfile(path, name)
        with open(name, "rb+") as handle:
            os.fsync(handle.fileno())


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries (its renames) to disk, where the system allows it."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def load_checkpoint(run_dir: Path, which: str = "last", map_location: MAP_LOCATION = "cpu"
                    ) -> dict:
    """Read ``run_dir/last.pt`` (``which="last"``) or ``previous.pt`` (``"previous"``). Where
    last.pt is missing, ``"last"`` reads the checkpoint being written (``.last.pt.tmp``) when
    it is complete (a kill stopped its write before its last rename).

    Raises ``FileNotFoundError`` when it is absent (a :class:`MissingCheckpoint`, naming
    previous.pt and how to use it, where only that one is there) and :class:`Advice` (a
    ``ValueError``) when it cannot be read or holds a NaN or infinity (naming the first such
    tensor), naming the other checkpoint if that one can be loaded, else saying that none can.
    """
    if which not in ("last", "previous"):
        raise ValueError(f"which must be 'last' or 'previous', got {which!r}")
    run_dir = Path(run_dir)
    path = run_dir / (LAST if which == "last" else PREVIOUS)
    if not path.is_file():
        state = _complete_writing(run_dir, map_location) if which == "last" else None
        if state is not None:
            return state
        if which == "last" and (run_dir / PREVIOUS).is_file():
            raise MissingCheckpoint(f"no checkpoint {path}, but {run_dir / PREVIOUS} is there; "
                                    f"use it with <use:previous>.")
        raise FileNotFoundError(f"no checkpoint {path}; has `contrastkit pretrain` finished "
                                f"an epoch in {run_dir}?")
    state, problem = _read(path, map_location)
    if problem is not None:
        raise Advice(f"checkpoint {path} {problem}{_other_hint(run_dir, which)}")
    assert state is not None  # _read gives the state or its problem
    return state


class MissingCheckpoint(Advice, FileNotFoundError):
    """last.pt is missing but previous.pt is there: a ``FileNotFoundError`` that advises
    using previous.pt (an :class:`Advice`)."""


def has_checkpoint(run_dir: Path) -> bool:
    """Whether the run folder holds a checkpoint: last.pt, previous.pt, or a complete
    checkpoint being written (which :func:`load_checkpoint` reads where last.pt is missing).
    A command that starts a run again removes a folder's checkpoints only when told to."""
    run_dir = Path(run_dir)
    return ((run_dir / LAST).is_file() or (run_dir / PREVIOUS).is_file()
            or _complete_writing(run_dir) is not None)


def _complete_writing(run_dir: Path, map_location: MAP_LOCATION = "cpu") -> dict | None:
    """The checkpoint being written (``.last.pt.tmp``) if it is complete (it loads, and holds
    a training state without NaN or infinity), else ``None``."""
    writing = run_dir / WRITING
    return _read(writing, map_location)[0] if writing.is_file() else None


def _read(path: Path, map_location: MAP_LOCATION) -> tuple[dict | None, str | None]:
    """The checkpoint at ``path`` and ``None``, or ``None`` and what is wrong with it (an
    :class:`Advice` template)."""
    try:
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # torch raises several types for damaged files
        return None, f"is corrupt or unreadable ({type(error).__name__}: {error})."
    bad = first_non_finite(state)
    if bad is not None:
        return None, (f"holds non-finite values (NaN or infinity) in {bad}: the run diverged "
                      f"before it was written.")
    if not isinstance(state, dict):
        return None, f"holds a {type(state).__name__}, not a training state."
    if "epoch" in state and "model" in state and "epochs_completed" not in state:
        return None, ("was written by an earlier contrastkit (0.1.0 before completed-epoch "
                      "counting) and cannot be resumed or evaluated; train the run again "
                      "with <overwrite>.")
    return state, None


def _other_hint(run_dir: Path, which: str) -> str:
    """A sentence naming the run's other checkpoint and how to use it if it can be loaded,
    else saying that the run has no usable checkpoint (an :class:`Advice` template); nothing
    after the advice to train the run again."""
    other_name = "previous" if which == "last" else "last"
    other = run_dir / (PREVIOUS if which == "last" else LAST)
    if not other.is_file():
        return (f" The run has no other checkpoint ({other} is missing): train it again with "
                f"<overwrite>.")
    if _read(other, "cpu")[1] is not None:
        return (f" The other checkpoint {other} is unusable too: the run has no usable "
                f"checkpoint; train it again with <overwrite>.")
    return f" The other checkpoint {other} is kept; use it with <use:{other_name}>."


@dataclass
class EpochState:
    """How far a run has got: ``epoch`` epochs completed and ``step`` steps of the next one
    done, the running sums of that epoch's step metrics and its training seconds so far.
    Checkpoints carry it, so a resumed epoch continues its sums."""

    epoch: int
    step: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def resumed_from(cls, checkpoint: dict) -> EpochState:
        """Where a run continues from ``checkpoint``."""
        return cls(checkpoint["epochs_completed"], checkpoint["step"],
                   dict(checkpoint["epoch_sums"]), checkpoint["epoch_seconds"])


def training_state(epoch_state: EpochState, encoder: nn.Module, optimizer: Optimizer,
                   scheduler: LambdaLR, scaler: GradScaler, generator: torch.Generator,
                   config: PretrainConfig, loss_fn: nn.Module, train_size: int) -> dict:
    """Everything a run needs to continue exactly: where it is, the model, the loss's own
    parameters (a learned temperature; ``{}`` for most losses), optimizer, scheduler, fp16
    scaler, the augmentation generator and every global RNG; and the size of the training
    set, which sets the steps of an epoch, so the schedule and the batches."""
    return {
        "epochs_completed": epoch_state.epoch,
        "step": epoch_state.step,
        "epoch_sums": dict(epoch_state.sums),
        "epoch_seconds": epoch_state.seconds,
        "train_size": train_size,
        "config": config.to_dict(),
        "model": encoder.state_dict(),
        "loss": loss_fn.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "augment_rng": generator.get_state(),
        "rng": {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": np.random.get_state(),
            "python": random.getstate(),
        },
    }


def seed_everything(seed: int) -> None:
    """Seed torch, numpy and Python's random."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def _restore_rng(rng: dict) -> None:
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])


def restore_training_state(state: dict, encoder: nn.Module, optimizer: Optimizer,
                           scheduler: LambdaLR, scaler: GradScaler, generator: torch.Generator,
                           loss_fn: nn.Module) -> EpochState:
    """Load a checkpoint ``state`` into the run's objects; return where the run continues.
    The scheduler is rebuilt over the run's (possibly longer) schedule from the step reached.
    A checkpoint from before learnable temperatures has no ``"loss"``: its loss had no state."""
    encoder.load_state_dict(state["model"])
    loss_fn.load_state_dict(state.get("loss", {}))
    optimizer.load_state_dict(state["optimizer"])
    resume_scheduler(scheduler, state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    generator.set_state(state["augment_rng"])
    _restore_rng(state["rng"])
    return EpochState.resumed_from(state)
