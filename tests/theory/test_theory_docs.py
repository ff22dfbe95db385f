"""Every Python block of docs/theory.md runs as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "theory.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_doc_has_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name}[block {index}]", "exec"), {})
