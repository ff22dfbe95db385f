"""The kinds of recipe cell other than ``pretrain``: each one a function of a cell's settings
and seed that returns the cell's metrics (a simulation, a toy experiment, a sweep of free
embeddings).

A recipe names its kind (``kind: simulate``). Each module of this package registers one
:class:`CellKind` in :data:`CELL_KINDS` when it is imported, and every module here is imported
when the registry is first read, so adding a kind is adding a module::

    from contrastkit.experiments.kinds import CELL_KINDS, CellKind

    CELL_KINDS.register("my_toy", CellKind(run=run_toy, settings=lambda: ("n", "steps"),
                                           metrics=("accuracy",), data="a 2-D toy set"))

A cell may record several points (a batch of problems solved together, such as one optimizer
run over a sweep of temperatures): a kind that declares ``point_axes`` returns a list of points,
each ``{"axes": {axis: value, ...}, "metrics": {...}}``, and every point becomes its own row
set in the results, its id the cell's id followed by its axes (``dim=full,n=8,t=0.5``), so the
summary, claims and report treat it as a cell of its own (:func:`cell_points`).

A kind's module imports nothing heavy at the top (listing and checking recipes does not load
torch); its ``run`` imports what it needs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.registry import Registry


@dataclass(frozen=True)
class CellKind:
    """How the runner runs, checks and describes the cells of one kind.

    Attributes:
        run: ``run(cell, folder, steps) -> metrics``. ``folder`` is the cell's folder (the
            run may write files there for its figures, creating it first), or ``None`` where
            nothing may be written (the dry run). ``steps`` overrides the cell's optimization
            steps: ``None`` runs the cell as set, ``1`` is the smoke test's single step, and
            ``0`` only builds and checks the cell, yet returns every metric the settings
            allow (the dry run checks the recipe's metrics against them).
        settings: the names of the settings a recipe of this kind may set (base, set, grid).
        metrics: every metric a cell of this kind can record.
        data: the data in words, for the report's setup ("free embeddings (simulation)").
        default_steps: the optimization steps of a cell that sets no ``steps``; ``None``
            for a kind without steps.
        point_axes: the axes of the points a cell records (a kind whose ``run`` returns a
            list of points); empty for a kind that records one set of metrics per cell.
            A recipe's claims and paper values may name them like grid axes.
    """

    run: Callable[..., Any]  # metrics: a dict, or a list of dicts (one per point)
    settings: Callable[[], tuple[str, ...]]
    metrics: tuple[str, ...]
    data: str
    default_steps: Callable[[], int | None] = lambda: None
    point_axes: tuple[str, ...] = ()

    def steps(self, settings: dict) -> int | None:
        """The optimization steps of a cell with ``settings``."""
        return settings.get("steps", self.default_steps())


def cell_points(recorded: dict | list) -> list[tuple[dict, dict]]:
    """The ``(axes, metrics)`` of each point a cell's run recorded: a mapping of metrics is one
    point without axes of its own; a list holds ``{"axes": ..., "metrics": ...}`` points."""
    if isinstance(recorded, dict):
        return [({}, recorded)]
    return [(point["axes"], point["metrics"]) for point in recorded]


def point_id(cell_id: str, axes: dict) -> str:
    """The id of a cell's point: the cell's id, then ``axis=value`` for each of the point's
    own axes (the cell's id alone for a point without axes; a cell without axes is named
    ``default`` and adds nothing)."""
    own = ",".join(f"{axis}={value}" for axis, value in axes.items())
    if not own:
        return cell_id
    return own if cell_id == "default" else f"{cell_id},{own}"


def _import_kinds() -> None:
    """Import every module of this package: each registers its kind."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__name__}.{module.name}")


#: The cell kinds other than ``pretrain``, by the name a recipe's ``kind`` gives.
CELL_KINDS: Registry[CellKind] = Registry("cell kind", load=_import_kinds)
