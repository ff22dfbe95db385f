"""Writing the files contrastkit makes (run folders, sweep folders, reports): atomic text and
JSON files, and every ``OSError`` (disk full, no permission) turned into one clear
:class:`RunFolderError`. A leaf: it imports neither torch nor any other contrastkit module, so
every layer that writes files uses it."""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path


class FileAccessError(ValueError):
    """A file or folder cannot be read or written for a reason of the file system (no
    permission, a full disk), not of what it holds: the command line reports it with exit
    status 1, as it does any ``OSError``, where bad input is exit status 2. A ``ValueError``
    to the Python API, whose errors name the file."""


class RunFolderError(FileAccessError):
    """A file of a folder that contrastkit writes (a run's, a sweep's, a report's) cannot be
    read or written (disk full, no permission, ...), or a run folder is in use by another
    run."""


@contextlib.contextmanager
def run_folder_io(action: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` raised in the block (also one that torch's checkpoint writer
    wrapped in a ``RuntimeError``) into a :class:`RunFolderError` saying what could not be done
    to ``path`` and why (``action`` is e.g. ``"write"``)."""
    try:
        yield
    except OSError as error:
        raise RunFolderError(f"cannot {action} {path}: {_reason(error)}") from error
    except RuntimeError as error:
        # torch's file writer turns the OSError of a failed write (a full disk) into
        # "RuntimeError: [enforce fail at inline_container.cc:...] unexpected pos ...", the
        # OSError left only as the exception's context
        cause = _os_error_in(error)
        if cause is None:
            raise
        raise RunFolderError(f"cannot {action} {path}: {_reason(cause)}") from error


def _reason(error: OSError) -> str:
    return "the disk is full" if error.errno == errno.ENOSPC else error.strerror or str(error)


def _os_error_in(error: BaseException | None) -> OSError | None:
    """The first ``OSError`` in ``error``'s chain of causes and contexts, or ``None``."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def read_utf8(path: Path, what: str) -> str:
    """The content of the file ``path`` as UTF-8 text (a byte-order mark skipped). ``what``
    names the file in errors (``"caption file data/train.tsv"``): a byte that is not UTF-8 is a
    ``ValueError`` naming its line, a file that cannot be read a :class:`FileAccessError`."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise FileAccessError(f"{what}: cannot read it ({error.strerror or error})") from None
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(f"{what}, line {line}: not UTF-8 text (byte "
                         f"0x{data[error.start]:02x}); save the file as UTF-8") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 through a temporary file, so a failed write (disk
    full) leaves the old content and no temporary file; errors are :class:`RunFolderError`."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    with run_folder_io("write", path):
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)


def write_json_atomic(path: Path, content: object) -> None:
    """Write ``content`` as JSON (indented, one trailing newline) to ``path``, creating its
    folder, through :func:`write_text_atomic`; errors are :class:`RunFolderError`."""
    path = Path(path)
    with run_folder_io("create", path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(content, indent=1) + "\n")
