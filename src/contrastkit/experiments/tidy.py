"""The tidy rows of a sweep: one per cell x seed x metric, labelled with the cell's settings."""

from __future__ import annotations

from collections.abc import Iterable

from . import recipe_checks
from .cell_folders import key
from .convergence import rejudge_rows
from .kinds import cell_points, point_id
from .recipe import Cell, Recipe

#: The columns every tidy row has, first (then one per other axis of the recipe).
ROW_COLUMNS = ("recipe", "tier", "cell", "loss", "batch_size", "temperature", "vrns", "seed",
               "metric", "value")


def tidy_rows(recipe: Recipe, tier: str, cells: Iterable[Cell],
              results: dict[tuple[str, int], dict]) -> list[dict]:
    """One row per cell x seed x metric of :func:`row_metrics`: the :data:`ROW_COLUMNS` (a
    setting the cell does not have, such as a simulation's ``batch_size``, is ``None``; a
    pretrain cell's unset settings are the config's defaults), then one column per other axis
    of the tier. A cell that recorded several points (:func:`~.kinds.cell_points`) gives one
    row per point x seed x metric, its ``cell`` the point's id and its axes columns too. A
    cell judged under an earlier convergence rule (a finished cell of an older contrastkit)
    is judged again by today's (:func:`~.convergence.rejudge_rows`)."""
    others = [axis for axis in recipe.axes(tier) if axis not in ROW_COLUMNS]
    defaults = recipe_checks.pretrain_defaults() if recipe.kind == "pretrain" else {}
    rows = []
    for cell in cells:
        settings = {column: cell.settings.get(column, defaults.get(column))
                    for column in ("loss", "batch_size", "temperature", "vrns")}
        for axes, metrics in cell_points(results[key(cell)]["metrics"]):
            shared = {"recipe": recipe.name, "tier": tier,
                      "cell": point_id(cell.cell_id, axes), **settings}
            rows += _point_rows(recipe, cell, shared, metrics,
                                {**{axis: cell.axes.get(axis) for axis in others}, **axes})
    return rejudge_rows(rows)


def row_metrics(recipe: Recipe) -> tuple[str, ...]:
    """The metrics of the tidy rows: the recipe's, and ``converged`` (1 or 0 per cell and seed,
    :mod:`.convergence`), which the claims read, with the rule's version and what the verdict
    was computed from (where a cell recorded it: a run of one epoch has no curves to judge),
    for the kinds that train and judge it: pretraining, and each kind whose metrics include
    it."""
    from .convergence import INPUTS, PRETRAIN_INPUTS
    from .kinds import CELL_KINDS

    extra: tuple[str, ...]
    if recipe.kind == "pretrain":
        extra = ("converged", *PRETRAIN_INPUTS)
    elif "converged" in (metrics := CELL_KINDS.get(recipe.kind).metrics):
        extra = ("converged", *(metric for metric in metrics if metric in INPUTS))
    else:
        extra = ()
    return tuple(dict.fromkeys((*recipe.metrics, *extra)))


def _point_rows(recipe: Recipe, cell: Cell, shared: dict, metrics: dict, axes: dict
                ) -> list[dict]:
    """The rows of one point of a cell (one per metric of :func:`row_metrics`)."""
    from .convergence import INPUTS

    rows = []
    for metric in row_metrics(recipe):
        if metric in INPUTS and metric not in recipe.metrics and metric not in metrics:
            continue  # a run that could not be judged, or a kind without that input
        if metric not in metrics:
            raise ValueError(f"cell {shared['cell']} seed {cell.seed} of {recipe.name} "
                             f"recorded no {metric!r} (it has {', '.join(metrics)})")
        rows.append({**shared, "seed": cell.seed, "metric": metric,
                     "value": float(metrics[metric]), **axes})
    return rows
