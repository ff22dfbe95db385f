"""The figures of a reproduction report, drawn from the summary over seeds (and, for some,
from small files the cells wrote), one PNG each beside the report.

Each figure is a :class:`FigureSpec` in :data:`FIGURES`; each module of this package registers
its figures when it is imported, and every module here is imported when the registry is first
read. A recipe names its figures (``figure: [name, ...]``, or ``none``); a recipe that names
none gets every figure whose ``wanted`` accepts its axes and metrics.

A figure that reads files of the cells declares them (``cell_files``) and reads them through
:meth:`FigureData.cell_file` (``cells/<cell>/seed-<k>/<name>`` under the folder the figure is
drawn from); an evidence folder (:mod:`contrastkit.experiments.evidence`) holds exactly those
files, so its figures are drawn again without the cells' run folders. A figure whose declared
files are not all there (a sweep folder whose ``cells/`` was deleted) is not drawn from the
others: :func:`missing_cell_files` says which are missing, and the report says so.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from contrastkit.registry import Registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class FigureData:
    """What a figure is drawn from: ``summary`` (one entry per cell and metric: the axis
    values, ``metric``, ``mean``, ``ci_low``, ``ci_high``, ``n``), the recipe's ``axes``, the
    ``paper``'s values (``{<axis values>..., "metric", "value"}``), the tidy ``rows`` (one per
    cell, seed and metric), ``out``, the folder the figure is written to, ``source``, the
    folder whose ``cells/`` hold the cells' files (``out`` when ``None``), ``paper_setting``,
    the paper's ``dataset`` and ``model`` in words (``{"dataset": "CIFAR-100", "model":
    "ResNet-18"}``; labels the paper's values, see :func:`.plotting.paper_setting`), and
    ``cell_files``, the names :meth:`cell_file` may read (set from the figure's
    :class:`FigureSpec` by :func:`draw_figures`; ``None``: any)."""

    summary: Sequence[dict]
    axes: list[str]
    paper: Sequence[dict]
    rows: Sequence[dict]
    out: Path
    source: Path | None = None
    paper_setting: dict | None = None
    cell_files: tuple[str, ...] | None = None

    def cell_file(self, cell: str, seed, name: str) -> Path | None:
        """``cells/<cell>/seed-<seed>/<name>`` under :attr:`source`, or ``None`` when it does
        not exist; a name the figure did not declare is a ``ValueError`` (an evidence folder
        would not hold it)."""
        if self.cell_files is not None and name not in self.cell_files:
            raise ValueError(f"a figure reads the cell file {name!r} without declaring it "
                             f"(its FigureSpec's cell_files: {', '.join(self.cell_files)})")
        path = Path(self.source or self.out) / "cells" / str(cell) / f"seed-{seed}" / name
        return path if path.is_file() else None

    def seeds(self, cell: str) -> list:
        """The seeds of ``cell`` in the rows, sorted."""
        return sorted({row["seed"] for row in self.rows if row["cell"] == cell})

    def cell_paths(self, cell: str, name: str) -> list[Path]:
        """The file ``name`` of each seed of ``cell`` that has it, by seed."""
        found = (self.cell_file(cell, seed, name) for seed in self.seeds(cell))
        return [path for path in found if path is not None]


@dataclass(frozen=True)
class CellFile:
    """A file of each cell's folder that a figure reads: ``name``, and for an ``.npz`` the
    ``keys`` (arrays) it reads, the only ones an evidence folder keeps (``None``: the whole
    file)."""

    name: str
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class FigureSpec:
    """``draw(data) -> matplotlib Figure``, or ``None`` when ``data`` lacks what it needs;
    ``wanted(axes, metrics)``: whether a recipe that names no figure gets this one;
    ``cell_files``: the files of the cells' folders it reads (names or :class:`CellFile` s),
    which an evidence folder keeps (never a checkpoint: small files written for figures)."""

    draw: Callable[[FigureData], Figure | None]
    wanted: Callable[[Sequence[str], Sequence[str]], bool] = lambda axes, metrics: False
    cell_files: tuple[str | CellFile, ...] = ()

    def files(self) -> tuple[CellFile, ...]:
        """:attr:`cell_files` as :class:`CellFile` s."""
        return tuple(item if isinstance(item, CellFile) else CellFile(item)
                     for item in self.cell_files)


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


def cell_files(kinds: Sequence[str]) -> dict[str, tuple[str, ...] | None]:
    """The cell files the figures ``kinds`` read: name -> the ``.npz`` arrays they read (the
    union over the figures; ``None`` when one reads the whole file), in declaration order."""
    wanted: dict[str, tuple[str, ...] | None] = {}
    for kind in kinds:
        for item in FIGURES.get(kind).files():
            if item.name not in wanted:
                wanted[item.name] = item.keys
            elif wanted[item.name] is None or item.keys is None:
                wanted[item.name] = None
            else:
                known = wanted[item.name] or ()
                wanted[item.name] = tuple(dict.fromkeys((*known, *item.keys)))
    return wanted


class Undrawn(NamedTuple):
    """A figure not drawn for want of cell files: the ``missing`` ones
    (``cells/<cell>/seed-<k>/<name>``, in the order of the rows) of the ``wanted`` it reads."""

    missing: tuple[str, ...]
    wanted: int

    def words(self, where: str = "") -> str:
        """``4 of the 4 cell files it reads are missing<where> (cells/..., ...)``."""
        count = len(self.missing)
        shown = self.missing[0] + (", ..." if count > 1 else "")
        return (f"{count} of the {self.wanted} cell files it reads "
                f"{'is' if count == 1 else 'are'} missing{where} ({shown})")


def cell_file_paths(rows, wanted: Mapping[str, tuple[str, ...] | None] | Sequence[str]
                    ) -> list[str]:
    """``cells/<cell>/seed-<k>/<name>`` for every cell and seed of ``rows`` and every name of
    ``wanted`` (name -> the arrays kept of an ``.npz``, ``None`` for the whole file)."""
    pairs = dict.fromkeys((row["cell"], row["seed"]) for row in rows)
    return [f"cells/{cell}/seed-{seed}/{name}" for cell, seed in pairs for name in wanted]


def missing_cell_files(kinds: Sequence[str], data: FigureData) -> dict[str, Undrawn]:
    """The figures of ``kinds`` that cannot be drawn from ``data``: those that declare cell
    files of which some are missing under ``data.source`` (every cell and seed of the rows,
    every name declared), by kind."""
    folder = Path(data.source or data.out)
    undrawn = {}
    for kind in kinds:
        names = dict.fromkeys(item.name for item in FIGURES.get(kind).files())
        wanted = cell_file_paths(data.rows, names) if names else []
        missing = tuple(path for path in wanted if not (folder / path).is_file())
        if missing:
            undrawn[kind] = Undrawn(missing, len(wanted))
    return undrawn


def draw_figures(kinds: Sequence[str], data: FigureData) -> list[Path]:
    """Draw each figure of ``kinds`` to ``data.out/<kind>.png`` (matplotlib's Agg backend); a
    figure that lacks its metric or axis, or any of its cell files (:func:`missing_cell_files`),
    is left out. Each figure may read only the cell files its spec declares. Returns the files
    written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    undrawn = missing_cell_files(kinds, data)
    written = []
    for kind in kinds:
        if kind in undrawn:
            continue
        spec = FIGURES.get(kind)
        declared = tuple(item.name for item in spec.files())
        figure = spec.draw(replace(data, cell_files=declared))
        if figure is None:
            continue
        path = Path(data.out) / f"{kind}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written
