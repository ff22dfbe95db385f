"""The Python examples of docs/geometry.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "geometry.md"


def test_python_blocks_of_the_user_guide_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)  # the examples write similarities.png
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert (tmp_path / "similarities.png").exists()
    assert "True" in capsys.readouterr().out
