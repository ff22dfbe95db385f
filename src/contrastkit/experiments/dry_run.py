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
    steps, which must record every metric of the recipe. Cells that differ only in their seed
    are built the same way, so each point of the grid is checked once, with its first seed
    (``on_cell`` is told of that cell). Then, the grid being valid, the data of the pretrain
    cells is checked: each split their runs and evaluations read is loaded once (unless the
    cell downloads it), so that missing files stop the dry run rather than the sweep half-way.
    The first error is raised."""
    from contrastkit.data import DATASETS
    from contrastkit.models import BACKBONES

    checked, data = set(), {}
    for cell in cells:
        if cell.cell_id in checked:
            continue
        checked.add(cell.cell_id)
        on_cell(cell)
        if cell.kind != "pretrain":
            _check_recorded(recipe, cell, CELL_KINDS.get(cell.kind).run(cell, None, 0))
            continue
        config = cell_config(cell, out)
        DATASETS.get(config.dataset)
        BACKBONES.get(config.backbone)
        _check_evaluate(cell)
        if not config.download:
            data.setdefault((config.dataset, config.data_dir), cell)
    for (dataset, data_dir), cell in data.items():
        _check_data(cell, dataset, data_dir)


def _check_data(cell: Cell, dataset: str, data_dir: str) -> None:
    """The splits of ``dataset`` that a pretrain cell's run and evaluation read are in
    ``data_dir`` (each is loaded: a missing file is the loader's error, which names it and
    how to get it)."""
    from contrastkit.data import load_dataset, pretrain_split

    for split in dict.fromkeys((pretrain_split(dataset), "train", "test")):
        try:
            load_dataset(dataset, split, data_dir)
        except FileNotFoundError as error:
            raise ValueError(f"every cell of {cell.recipe} ({cell.tier}) is valid, but the "
                             f"data of cell {cell.cell_id} is missing: {error} (for a sweep: "
                             f"--data-dir FOLDER)") from None


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
