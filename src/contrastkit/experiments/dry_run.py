"""``--dry-run``: every cell of a tier built and checked without running it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .cell_folders import cell_config
from .kinds import CELL_KINDS, cell_points
from .recipe import Cell, Recipe


def check_cells(recipe: Recipe, cells: list[Cell], out: str | Path,
                on_cell: Callable[[Cell], None] = lambda cell: None) -> None:
    """Build every cell without running it (``--dry-run``): a pretrain cell's config, dataset
    and backbone names and evaluation arguments; a cell of another kind is built and run for 0
    steps, which must record every metric of the recipe. The first error is raised."""
    from contrastkit.data import DATASETS
    from contrastkit.models import BACKBONES

    for cell in cells:
        on_cell(cell)
        if cell.kind != "pretrain":
            _check_recorded(recipe, cell, CELL_KINDS.get(cell.kind).run(cell, None, 0))
            continue
        config = cell_config(cell, out)
        DATASETS.get(config.dataset)
        BACKBONES.get(config.backbone)
        _check_evaluate(cell)


def _check_recorded(recipe: Recipe, cell: Cell, recorded: dict | list) -> None:
    """Every point a cell recorded has the kind's point axes and every metric of the recipe."""
    expected = list(CELL_KINDS.get(cell.kind).point_axes)
    for axes, metrics in cell_points(recorded):
        if list(axes) != expected:
            raise ValueError(f"cell {cell.cell_id} of {recipe.name} records a point with axes "
                             f"{', '.join(axes) or 'none'}; its kind {cell.kind} declares "
                             f"{', '.join(expected) or 'none'}")
        missing = [metric for metric in recipe.metrics if metric not in metrics]
        if missing:
            raise ValueError(f"cell {cell.cell_id} of {recipe.name} records no "
                             f"{', '.join(missing)} with its settings")


def _check_evaluate(cell: Cell) -> None:
    from contrastkit.checks.scalars import check_count, check_positive
    from contrastkit.evaluate.run import linear_protocol

    for name, value in cell.evaluate.items():
        if name == "knn_temperature":
            check_positive(f"evaluate.{name}", value)
        elif name not in ("linear_solver", "linear_epochs"):
            check_count(f"evaluate.{name}", value, 1)
    try:
        linear_protocol(cell.evaluate.get("linear_solver", "lbfgs"),
                        cell.evaluate.get("linear_epochs"))
    except ValueError as error:
        raise ValueError(f"evaluate of {cell.recipe}: {error}") from None
