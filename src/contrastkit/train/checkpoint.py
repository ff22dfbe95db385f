"""Checkpoints: what a training state holds (:class:`EpochState`, :func:`training_state`,
:func:`restore_training_state`) and how it is written (``last.pt`` and the one before it,
``previous.pt``).

A checkpoint is written to a temporary file in the same folder, flushed to disk, and moved
into place with ``os.replace``; the old ``last.pt`` becomes ``previous.pt`` first. A crash at
any moment therefore leaves at least one complete checkpoint. A checkpoint holding a
non-finite number (NaN or infinity) is never written, and never loaded.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .folder_io import run_folder_io
from .optim import resume_scheduler

LAST = "last.pt"
PREVIOUS = "previous.pt"


def first_non_finite(state: object, prefix: str = "") -> str | None:
    """The key path (``"model.fc.weight"``) of the first NaN or infinity among the floating
    tensors and floats nested in ``state`` (dicts, lists, tuples), or ``None``."""
    if isinstance(state, torch.Tensor):
        finite = not state.is_floating_point() or bool(torch.isfinite(state).all())
        return None if finite else prefix
    if isinstance(state, float):
        return None if math.isfinite(state) else prefix
    if isinstance(state, dict):
        items = state.items()
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
    """Write ``state`` as ``run_dir/last.pt`` atomically, keeping the old one as previous.pt
    (``rotate=False``: replace last.pt and keep previous.pt, for when last.pt is not known to
    be good, e.g. after resuming from previous.pt).

    A state holding a NaN or infinity is refused (``ValueError``) and nothing is written. A
    failed write (disk full, ...) removes its temporary file, leaves both checkpoints as they
    were and raises :class:`RunFolderError`.
    """
    run_dir = Path(run_dir)
    last = run_dir / LAST
    bad = first_non_finite(state)
    if bad is not None:
        raise ValueError(f"refusing to write checkpoint {last}: {bad} is not finite")
    temporary = run_dir / f".{LAST}.tmp"
    with run_folder_io("write checkpoint", last):
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            with open(temporary, "wb") as handle:
                torch.save(state, handle)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        if rotate and last.exists():
            os.replace(last, run_dir / PREVIOUS)
        os.replace(temporary, last)
    return last


def load_checkpoint(run_dir: Path, which: str = "last", map_location="cpu") -> dict:
    """Read ``run_dir/last.pt`` (``which="last"``) or ``previous.pt`` (``"previous"``).

    Raises ``FileNotFoundError`` when it is absent and ``ValueError`` when it cannot be read
    or holds a NaN or infinity (naming the first such tensor), naming the other checkpoint if
    it exists so the user can resume from it.
    """
    if which not in ("last", "previous"):
        raise ValueError(f"which must be 'last' or 'previous', got {which!r}")
    run_dir = Path(run_dir)
    path = run_dir / (LAST if which == "last" else PREVIOUS)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint {path}; has `contrastkit pretrain` finished "
                                f"an epoch in {run_dir}?")
    try:
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # torch raises several types for damaged files
        raise ValueError(f"checkpoint {path} is corrupt or unreadable "
                         f"({type(error).__name__}: {error}).{_other_hint(run_dir, which)}"
                         ) from error
    bad = first_non_finite(state)
    if bad is not None:
        raise ValueError(f"checkpoint {path} holds non-finite values (NaN or infinity) in "
                         f"{bad}: the run diverged before it was written."
                         f"{_other_hint(run_dir, which)}")
    if "epoch" in state and "model" in state and "epochs_completed" not in state:
        raise ValueError(f"checkpoint {path} was written by an earlier contrastkit (0.1.0 "
                         f"before completed-epoch counting) and cannot be resumed or evaluated; "
                         f"train the run again with --overwrite")
    return state


def _other_hint(run_dir: Path, which: str) -> str:
    """A sentence naming the run's other checkpoint and how to resume from it, if it exists."""
    other_name = "previous" if which == "last" else "last"
    other = run_dir / (PREVIOUS if which == "last" else LAST)
    if not other.is_file():
        return ""
    return (f" The other checkpoint {other} is kept; resume from it with "
            f"`--resume {other_name}`.")


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


def training_state(epoch_state: EpochState, encoder, optimizer, scheduler, scaler, generator,
                   config, loss_fn) -> dict:
    """Everything a run needs to continue exactly: where it is, the model, the loss's own
    parameters (a learned temperature; ``{}`` for most losses), optimizer, scheduler, AMP
    scaler, the augmentation generator and every global RNG."""
    return {
        "epochs_completed": epoch_state.epoch,
        "step": epoch_state.step,
        "epoch_sums": dict(epoch_state.sums),
        "epoch_seconds": epoch_state.seconds,
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


def restore_training_state(state: dict, encoder, optimizer, scheduler, scaler,
                           generator, loss_fn) -> EpochState:
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
