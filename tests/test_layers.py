"""The layers of docs/architecture.md hold: the import graph of ``src/contrastkit`` has no cycle,
the leaves import nothing above them, and no module grows past about 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "contrastkit"
LEAVES = ("geometry", "theory", "checks", "rows", "registry", "distributed", "yaml_files",
          "files", "lazy_exports")
ABOVE_LEAVES = ("losses", "data", "models", "monitor", "train", "evaluate", "simulate",
                "experiments", "commands", "cli", "integrations")
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The contrastkit modules that ``name`` imports anywhere in its code (also inside
    functions), except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def visit(node):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:  # `from pkg import module` names a module
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_import_graph_has_no_cycle():
    state: dict[str, str] = {}

    def cycle_from(module: str, trail: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                return trail + [module, target]
            if target not in state:
                found = cycle_from(target, trail + [module])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(GRAPH):
        if module not in state:
            cycle = cycle_from(module, [])
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("leaf", LEAVES)
def test_a_leaf_imports_nothing_above_it(leaf):
    inside = {name: targets for name, targets in GRAPH.items()
              if name == f"contrastkit.{leaf}" or name.startswith(f"contrastkit.{leaf}.")}
    assert inside, f"no module contrastkit.{leaf}"
    for name, targets in inside.items():
        above = sorted(t for t in targets
                       if t.split(".")[1] in ABOVE_LEAVES)
        assert not above, f"{name} imports {above}, above the leaves"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_400_lines(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by what its parts do"


def test_the_graph_sees_the_imports_it_checks():
    """The graph is not empty by mistake: the loop imports the config, the losses their
    registry."""
    assert "contrastkit.train.config" in GRAPH["contrastkit.train.loop"]
    assert "contrastkit.losses.registry" in GRAPH["contrastkit.losses.siglip"]
    assert "contrastkit.checks.scalars" in GRAPH["contrastkit.theory.sigmoid"]
