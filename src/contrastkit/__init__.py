"""contrastkit: contrastive learning seen through the similarities of embeddings.

Subpackages are imported on first use: ``from contrastkit import losses, geometry, theory``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: The package's version, the one place it is set: the build reads it (pyproject.toml's
#: ``[tool.setuptools.dynamic]``); CITATION.cff repeats it (tests/test_citation.py holds the two
#: equal); a release is tagged ``v`` + it (.github/workflows/release.yml refuses another tag).
__version__ = "0.1.0"

_SUBMODULES = frozenset(
    {
        "cli",
        "data",
        "distributed",
        "evaluate",
        "experiments",
        "geometry",
        "losses",
        "models",
        "simulate",
        "theory",
        "train",
    }
)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'contrastkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES)
