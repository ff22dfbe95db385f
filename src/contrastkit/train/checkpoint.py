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
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from contrastkit.files import run_folder_io

from .optim import resume_scheduler

LAST = "last.pt"
PREVIOUS = "previous.pt"
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
        return Advice(self.template, {**self.options, **options})


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

    Raises ``FileNotFoundError`` when it is absent and :class:`Advice` (a ``ValueError``)
    when it cannot be read or holds a NaN or infinity (naming the first such tensor), naming
    the other checkpoint if that one can be loaded, else saying that none can.
    """
    if which not in ("last", "previous"):
        raise ValueError(f"which must be 'last' or 'previous', got {which!r}")
    run_dir = Path(run_dir)
    path = run_dir / (LAST if which == "last" else PREVIOUS)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint {path}; has `contrastkit pretrain` finished "
                                f"an epoch in {run_dir}?")
    state, problem = _read(path, map_location)
    if problem is not None:
        raise Advice(f"checkpoint {path} {problem}{_other_hint(run_dir, which)}")
    return state


def _read(path: Path, map_location) -> tuple[dict | None, str | None]:
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
