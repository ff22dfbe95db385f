"""The Markdown pieces of ``report.md``: one-line text, table cells and rows."""

from __future__ import annotations

#: A table cell with no value.
MISSING = "—"


def inline(text) -> str:
    """Text on one line (a recipe's folded YAML may hold line breaks)."""
    return " ".join(str(text).split())


def cell(value) -> str:
    """A table cell: one line, its pipes escaped."""
    return inline(value if value is not None else MISSING).replace("|", "\\|")


def row(cells) -> str:
    return "| " + " | ".join(cell(value) for value in cells) + " |"
