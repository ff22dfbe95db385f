"""``--dry-run``: every cell of a tier built and checked without running it, and the
recipe's claims checked against the tier's grid (:func:`check_claims`, which a sweep runs too
before its first cell)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .cell_folders import cell_config, key
from .kinds import CELL_KINDS, cell_points
from .recipe import Cell, Recipe


def check_cells(recipe: Recipe, cells: list[Cell], out: str | Path,
                on_cell: Callable[[Cell], None] = lambda cell: None) -> None:
    """Build every cell without running it (``--dry-run``): a pretrain cell's config, dataset
    and backbone names and evaluation arguments; a cell of another kind is built and run for 0
    steps, which must record every metric of the recipe. Cells that differ only in their seed
    are built the same way, so each point of the grid is checked once, with its first seed
    (``on_cell`` is told of that cell). Then the recipe's claims are tested on made-up values
    of these cells (:func:`check_claims`), and, the grid being valid, the data of the pretrain
    cells is checked: each split their runs and evaluations read is loaded once (unless the
    cell downloads it), so that missing files stop the dry run rather than the sweep half-way.
    The first error is raised."""
    from contrastkit.data import DATASETS
    from contrastkit.models import BACKBONES

    checked: set = set()
    data: dict = {}
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
    check_claims(recipe, cells)
    for (dataset, data_dir), cell in data.items():
        _check_data(cell, dataset, data_dir)


def check_claims(recipe: Recipe, cells: list[Cell]) -> None:
    """The recipe's claims can be tested on the results of ``cells`` (one tier's, before any
    runs): each claim that names only grid axes is evaluated
    (:func:`~.claims.evaluate_claims`) on the rows the sweep would write
    (:func:`~.tidy.tidy_rows`), every metric made up (random; ``converged`` 1). A claim that
    names a level or axis the tier's grid lacks, or compares along an axis of one level, is
    the ``ValueError`` the sweep would raise after its last cell, said before the first. A
    claim on the points a cell records (a kind's point axes) is left to the run: its levels
    are known only then."""
    import numpy as np

    from .claim_specs import parse_claim
    from .claims import CONVERGED, evaluate_claims
    from .recipe_checks import kind_point_axes
    from .tidy import row_metrics, tidy_rows

    point_axes = set(kind_point_axes(recipe.kind))
    claims = tuple(claim for claim in recipe.claims
                   if not parse_claim(claim).named & point_axes)
    if not claims or not cells:
        return
    draws = np.random.default_rng(0)
    results = {key(cell): {"metrics": {metric: 1.0 if metric == CONVERGED
                                       else float(draws.normal())
                                       for metric in row_metrics(recipe)}} for cell in cells}
    rows = tidy_rows(recipe, cells[0].tier, cells, results)
    try:
        evaluate_claims(replace(recipe, claims=claims), rows)
    except ValueError as error:
        raise ValueError(f"the claims of {recipe.name} cannot be tested on the "
                         f"{cells[0].tier} tier's grid (nothing was run): {error}") from None


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
