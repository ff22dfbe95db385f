"""Atomic checkpoints: ``last.pt`` and the one before it, ``previous.pt``.

A checkpoint is written to a temporary file in the same folder, flushed to disk, and moved
into place with ``os.replace``; the old ``last.pt`` becomes ``previous.pt`` first. A crash at
any moment therefore leaves at least one complete checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

LAST = "last.pt"
PREVIOUS = "previous.pt"


def save_checkpoint(run_dir: Path, state: dict) -> Path:
    """Write ``state`` as ``run_dir/last.pt`` atomically, keeping the old one as previous.pt."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    temporary = run_dir / f".{LAST}.tmp"
    with open(temporary, "wb") as handle:
        torch.save(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    last = run_dir / LAST
    if last.exists():
        os.replace(last, run_dir / PREVIOUS)
    os.replace(temporary, last)
    return last


def load_checkpoint(run_dir: Path, which: str = "last", map_location="cpu") -> dict:
    """Read ``run_dir/last.pt`` (``which="last"``) or ``previous.pt`` (``"previous"``).

    Raises ``FileNotFoundError`` when it is absent and ``ValueError`` when it cannot be read,
    naming the other checkpoint if it exists so the user can resume from it.
    """
    if which not in ("last", "previous"):
        raise ValueError(f"which must be 'last' or 'previous', got {which!r}")
    run_dir = Path(run_dir)
    path = run_dir / (LAST if which == "last" else PREVIOUS)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint {path}; has `contrastkit pretrain` finished "
                                f"an epoch in {run_dir}?")
    try:
        return torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # torch raises several types for damaged files
        other = run_dir / (PREVIOUS if which == "last" else LAST)
        hint = (f" The other checkpoint {other} is kept; resume from it with "
                f"`--resume {'previous' if which == 'last' else 'last'}`."
                if other.is_file() else "")
        raise ValueError(f"checkpoint {path} is corrupt or unreadable "
                         f"({type(error).__name__}: {error}).{hint}") from error
