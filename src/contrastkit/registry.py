"""A registry of named entries, one per kind (losses, datasets, backbones).

Each kind keeps one :class:`Registry`; adding an entry is one call or one decorator, and every
list of names (the config's checks, the command line's choices, the docs) reads it::

    from contrastkit.data import DATASETS, DatasetSpec

    DATASETS.register("my_images", DatasetSpec(load=my_loader))

The registry iterates over its names and answers ``name in registry``, so it reads like the
tuple of names it replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

Entry = TypeVar("Entry")


class Registry(Generic[Entry]):
    """Named entries of one ``kind`` (the word used in error messages: ``"dataset"``)."""

    def __init__(self, kind: str, load: Callable[[], None] | None = None):
        """``load``, if given, is called once, the first time the registry is read (by
        :meth:`get`, :meth:`names`, ``in``, ``len`` or iteration): it imports the modules
        that register the built-in entries, so that importing the registry stays cheap."""
        self.kind = kind
        self._load = load
        self._entries: dict[str, Entry] = {}

    def _loaded(self) -> dict[str, Entry]:
        """The entries, after the built-in ones are loaded."""
        if self._load is not None:
            load, self._load = self._load, None
            load()
        return self._entries

    def register(self, name: str, entry: Entry | None = None):
        """Add ``entry`` under ``name``; without ``entry``, a decorator that adds what it
        decorates. A name may be registered again only with an equal entry (re-running a
        module), never silently replaced."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{self.kind} name must be a Python identifier such as 'mine', "
                             f"got {name!r}")
        if entry is None:
            def decorate(obj: Entry) -> Entry:
                self.register(name, obj)
                return obj

            return decorate
        known = self._entries.get(name)
        if known is not None and known != entry:
            raise ValueError(f"a {self.kind} named {name!r} is already registered; "
                             f"choose another name")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> Entry:
        """The entry registered as ``name``; a ``ValueError`` listing the names otherwise."""
        try:
            return self._loaded()[name]
        except (KeyError, TypeError):
            raise ValueError(f"{self.kind} must be one of {', '.join(self.names())}; "
                             f"got {name!r}") from None

    def names(self, where: Callable[[Entry], bool] | None = None) -> tuple[str, ...]:
        """The registered names, sorted; only those whose entry satisfies ``where`` if given."""
        return tuple(sorted(name for name, entry in self._loaded().items()
                            if where is None or where(entry)))

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"
