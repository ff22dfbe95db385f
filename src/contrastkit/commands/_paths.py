"""Checks that the commands' output paths can be written, made before any computation so that a
bad path fails at once and leaves nothing behind (no folder is created here). A path that is
not one (a file where a folder should be) is a ``ValueError``; a folder without write
permission a :class:`~contrastkit.files.FileAccessError` (exit status 1)."""

from __future__ import annotations

import os
from pathlib import Path

from contrastkit.files import FileAccessError


def check_writable_file(path: Path, setting: str) -> None:
    """Raise ``ValueError`` naming ``setting`` unless the file ``path`` can be created or
    replaced (missing parent folders count as creatable when their nearest existing ancestor is
    a writable folder)."""
    if path.is_dir():
        raise ValueError(f"{setting} {path} is a folder; expected a file name")
    _check_creatable(path.parent, f"{setting} {path}")


def check_writable_folder(path: Path, setting: str) -> None:
    """Raise ``ValueError`` naming ``setting`` unless ``path`` is, or can be created as, a
    writable folder."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"{setting} {path} is a file; expected a folder")
    _check_creatable(path, f"{setting} {path}")


def _check_creatable(folder: Path, what: str) -> None:
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{what} cannot be written: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):  # the file system's refusal: exit status 1
        raise FileAccessError(f"{what} cannot be written: no permission to write in "
                              f"{existing}")
