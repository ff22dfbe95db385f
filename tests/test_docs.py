"""Documentation runs as written: every ```python block of the README and docs/*.md (one
namespace per file), and every docstring example (doctest) in the package."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import contrastkit

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(contrastkit.__path__, prefix="contrastkit.")
    if info.name != "contrastkit.__main__"
)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_python_examples_run(document, tmp_path, monkeypatch):
    blocks = PYTHON_BLOCK.findall(document.read_text())
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, f"{document.name}", "exec"), namespace)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
