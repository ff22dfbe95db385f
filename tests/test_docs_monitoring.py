"""docs/monitoring.md: each python block runs on its own, as a reader copies it (tests/test_docs.py
runs a document's blocks one after the other in one namespace, where a block can lean on the
imports and data of the blocks before it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCUMENT = Path(__file__).resolve().parent.parent / "docs" / "monitoring.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
BLOCKS = PYTHON_BLOCK.findall(DOCUMENT.read_text())


def test_the_document_has_the_plain_loop_and_the_lightning_examples():
    assert len(BLOCKS) == 3
    assert "import lightning.pytorch" in BLOCKS[1]
    assert "OnlineProbeCallback(" in BLOCKS[2]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_example_runs_alone(index, tmp_path, monkeypatch):
    block = BLOCKS[index]
    if "lightning" in block:
        pytest.importorskip("lightning.pytorch")
    monkeypatch.chdir(tmp_path)  # the Lightning example writes its logs here
    exec(compile(block, f"{DOCUMENT.name}, block {index + 1}", "exec"), {"__name__": "__docs__"})
