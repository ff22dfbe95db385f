"""Writing into the run folder: atomic text files, and every ``OSError`` (disk full, no
permission) turned into one clear :class:`RunFolderError`."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path


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
