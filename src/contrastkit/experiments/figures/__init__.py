"""The figures of a reproduction report, drawn from the summary over seeds (and, for some,
from files the cells wrote), one PNG each beside the report.

Each figure is a :class:`FigureSpec` in :data:`FIGURES`; each module of this package registers
its figures when it is imported, and every module here is imported when the registry is first
read. A recipe names its figures (``figure: [name, ...]``, or ``none``); a recipe that names
none gets every figure whose ``wanted`` accepts its axes and metrics.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from contrastkit.registry import Registry


@dataclass(frozen=True)
class FigureData:
    """What a figure is drawn from: ``summary`` (one entry per cell and metric: the axis
    values, ``metric``, ``mean``, ``ci_low``, ``ci_high``, ``n``), the recipe's ``axes``, the
    ``paper``'s values (``{<axis values>..., "metric", "value"}``), the tidy ``rows`` (one per
    cell, seed and metric) and ``out``, the sweep's folder (cells under ``out/cells``)."""

    summary: Sequence[dict]
    axes: list[str]
    paper: Sequence[dict]
    rows: Sequence[dict]
    out: Path


@dataclass(frozen=True)
class FigureSpec:
    """``draw(data) -> matplotlib Figure``, or ``None`` when ``data`` lacks what it needs;
    ``wanted(axes, metrics)``: whether a recipe that names no figure gets this one."""

    draw: Callable[[FigureData], object]
    wanted: Callable[[Sequence[str], Sequence[str]], bool] = lambda axes, metrics: False


def _import_figures() -> None:
    """Import every module of this package: each registers its figures."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__name__}.{module.name}")


#: The report's figures, by the name a recipe's ``figure`` gives.
FIGURES: Registry[FigureSpec] = Registry("figure", load=_import_figures)


def figure_kinds(choice, axes: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """The figures to draw: ``choice`` (a recipe's ``figure``: one name, a list of names, or
    ``"none"``) when given, else every figure that wants the results' axes and metrics."""
    if choice is not None:
        kinds = [choice] if isinstance(choice, str) else list(choice)
        for kind in kinds:
            if kind != "none":
                FIGURES.get(kind)
        return [kind for kind in kinds if kind != "none"]
    return [name for name in FIGURES if FIGURES.get(name).wanted(axes, metrics)]


def draw_figures(kinds: Sequence[str], data: FigureData) -> list[Path]:
    """Draw each figure of ``kinds`` to ``data.out/<kind>.png`` (matplotlib's Agg backend); a
    figure that lacks its metric or axis is left out. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for kind in kinds:
        figure = FIGURES.get(kind).draw(data)
        if figure is None:
            continue
        path = Path(data.out) / f"{kind}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written
