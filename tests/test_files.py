"""contrastkit.files: atomic writes keep the old content when the disk is full, and an
``OSError`` (also one that torch wrapped in a ``RuntimeError``) becomes one clear line."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from contrastkit.files import RunFolderError, run_folder_io, write_json_atomic, write_text_atomic


def _full_disk(self, *args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_keeps_the_old_content_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "report.md"
    write_text_atomic(path, "old\n")
    monkeypatch.setattr(Path, "write_text", _full_disk)
    with pytest.raises(RunFolderError, match=r"^cannot write .*report.md: the disk is full$"):
        write_text_atomic(path, "new\n")
    monkeypatch.undo()
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_write_json_atomic_creates_the_folder(tmp_path):
    path = tmp_path / "cells" / "a" / "result.json"
    write_json_atomic(path, {"loss": 1.5})
    assert json.loads(path.read_text()) == {"loss": 1.5}
    assert path.read_text().endswith("}\n")


def test_an_os_error_wrapped_in_a_runtime_error_is_one_line(tmp_path):
    """As torch's checkpoint writer wraps the ``ENOSPC`` of a failed write."""
    with pytest.raises(RunFolderError, match=r"^cannot write .*last.pt: the disk is full$"):
        with run_folder_io("write", tmp_path / "last.pt"):
            try:
                raise OSError(errno.ENOSPC, "No space left on device")
            except OSError:
                raise RuntimeError("[enforce fail at inline_container.cc] unexpected pos") \
                    from None


def test_a_runtime_error_without_an_os_error_is_left_alone(tmp_path):
    with pytest.raises(RuntimeError, match="not about files"):
        with run_folder_io("write", tmp_path / "x"):
            raise RuntimeError("not about files")
