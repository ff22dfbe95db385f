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


@pytest.fixture
def scratch_registries(monkeypatch):
    """Examples that register a loss, dataset or backbone register it for their test only."""
    from contrastkit.data import DATASETS
    from contrastkit.losses.registry import LOSSES
    from contrastkit.models import BACKBONES

    for registry in (LOSSES, DATASETS, BACKBONES):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_python_examples_run(document, tmp_path, monkeypatch, scratch_registries):
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


def test_the_docs_table_of_losses_is_the_registry():
    """docs/losses.md lists every registered loss with the capabilities its class declares."""
    from contrastkit import losses

    def mark(flag: bool) -> str:
        return "yes" if flag else "\u2014"

    text = (ROOT / "docs" / "losses.md").read_text()
    listed = re.findall(r"^\| `(\w+)` \| `losses\.\w+` \|", text, re.M)
    assert listed == list(losses.names(regularizers=True))
    for name in listed:
        cls = losses.get(name)
        settings = ", ".join(f"`{h}`" for h in cls.hyperparameters) or "\u2014"
        row = (f"| `{name}` | `losses.{cls.__name__}` | {settings} | {mark(cls.uses_labels)} | "
               f"{mark(cls.supports_chunking)} | {mark(cls.supports_distributed)} | "
               f"{'regularizer' if cls.regularizer else 'loss'} |")
        assert row in text, f"docs/losses.md: the row of {name} should read {row}"
