"""The run folder's files: atomic checkpoints (``last.pt`` and the one before it,
``previous.pt``), the folder's lock, and clear errors when the folder cannot be written.

A checkpoint is written to a temporary file in the same folder, flushed to disk, and moved
into place with ``os.replace``; the old ``last.pt`` becomes ``previous.pt`` first. A crash at
any moment therefore leaves at least one complete checkpoint. A checkpoint holding a
non-finite number (NaN or infinity) is never written, and never loaded.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
from collections.abc import Iterator
from pathlib import Path

import torch

LAST = "last.pt"
PREVIOUS = "previous.pt"
LOCK = ".lock"


class RunFolderError(ValueError):
    """A file of the run folder cannot be written (disk full, no permission, ...) or the
    folder is in use by another run."""


@contextlib.contextmanager
def run_folder_io(action: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` raised in the block into a :class:`RunFolderError` saying what
    could not be done to ``path`` and why (``action`` is e.g. ``"write"``)."""
    try:
        yield
    except OSError as error:
        reason = ("the disk is full" if error.errno == errno.ENOSPC
                  else error.strerror or str(error))
        raise RunFolderError(f"cannot {action} {path}: {reason}") from error


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a failed write (disk full)
    leaves the old content and no temporary file; errors are :class:`RunFolderError`."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    with run_folder_io("write", path):
        try:
            temporary.write_text(text)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


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
    return state


def _other_hint(run_dir: Path, which: str) -> str:
    """A sentence naming the run's other checkpoint and how to resume from it, if it exists."""
    other_name = "previous" if which == "last" else "last"
    other = run_dir / (PREVIOUS if which == "last" else LAST)
    if not other.is_file():
        return ""
    return (f" The other checkpoint {other} is kept; resume from it with "
            f"`--resume {other_name}`.")


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the run folder (``run_dir/.lock``, creating the folder) for
    the duration of the block; raise :class:`RunFolderError` naming the process that holds
    it. The lock is the kernel's (``flock``): a killed process releases it, so a stale lock
    file never blocks a run. Without ``fcntl`` (Windows) nothing is locked."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    run_dir = Path(run_dir)
    path = run_dir / LOCK
    with run_folder_io("create the run folder (runs_dir/name)", run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise RunFolderError(
                f"run folder {run_dir} is in use by another run (process {holder}); wait for "
                f"it to finish, or choose another name=") from None
        with run_folder_io("write", path):
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        yield
