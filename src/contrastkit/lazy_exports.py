"""Names a package hands on from its modules, imported on first use (PEP 562), so that
importing the package (e.g. for ``contrastkit pretrain --help``) does not load torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each
    public name to the submodule defining it; ``namespace`` is the package's ``globals()``.
    Use as ``__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())``."""

    def __getattr__(name: str) -> object:
        if name in exports:
            return getattr(importlib.import_module(f".{exports[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
