"""Whether a run record (``run.json``) and the rows of its ``results.csv`` describe the same
sweep, so that a report regenerated from them cannot say what the results do not: the rows'
recipe and tier are the record's, the record's tier is one of its recipe snapshot's, every
row's cell is a point of that tier's grid (with its own point axes, for a kind that records
points) and every point has rows, a row's axis columns hold the levels its cell's id names,
every cell has the same seeds, and what the record counts
(``seeds``, ``cells``, ``runs``, ``cell_runs``; each checked where the record has it) is what
the rows hold. :func:`check_record_tier` and :func:`check_record_rows` raise a ``ValueError``
naming the first mismatch and both files (the record's ``format`` is checked where it is read,
:func:`~.evidence.read_run_record`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .recipe import Recipe, cell_id
from .recipe_checks import kind_point_axes
from .results import cell_axes, field_text


def check_record_tier(record: Mapping, recipe: Recipe, path: Path) -> None:
    """The record's tier is one of its recipe snapshot's (``path``: the record's file)."""
    if record["tier"] not in recipe.tiers:
        raise ValueError(f"{path} says tier {record['tier']!r}, which its recipe snapshot "
                         f"lacks (tiers: {', '.join(recipe.tiers)})")


def check_record_rows(record: Mapping, recipe: Recipe, rows: Sequence[dict], path: Path,
                      results: Path) -> None:
    """The record at ``path`` and the ``rows`` of ``results`` describe the same sweep of
    ``recipe`` (the record's snapshot); see the module's text."""
    for key in ("recipe", "tier"):
        found = sorted({str(row[key]) for row in rows})
        if found != [str(record[key])]:
            raise ValueError(f"{path} says {key} {record[key]!r}; its {results.name} rows say "
                             f"{', '.join(map(repr, found))}: they are not of the same sweep")
    tier = record["tier"]
    grid = [cell_id(point) for point in recipe.points(tier)]
    point_axes = kind_point_axes(recipe.kind)
    seeds: dict[str, set] = {}
    for row in rows:
        seeds.setdefault(row["cell"], set()).add(row["seed"])
    covered = set()
    for cell in seeds:
        point = next((point for point in grid if _of_grid_cell(cell, point, point_axes)), None)
        if point is None:
            raise ValueError(f"{results} holds cell {cell!r}, which is not a point of the "
                             f"{tier} tier's grid in its recipe snapshot "
                             f"({_grid_words(recipe, tier, len(grid))})")
        covered.add(point)
    missing = [point for point in grid if point not in covered]
    if missing:
        raise ValueError(f"{results} has no rows of cell {missing[0]!r} of the {tier} tier's "
                         f"grid in its recipe snapshot ({len(missing)} of {len(grid)} cells)")
    _check_axis_columns(rows, results)
    expected: list | None = _recorded_seeds(record, path)
    if expected is None:
        expected = sorted(next(iter(seeds.values())))
    for cell, cell_seeds in seeds.items():
        if sorted(cell_seeds) != expected:
            raise ValueError(f"{results}: cell {cell!r} has seeds {_listed(sorted(cell_seeds))}; "
                             f"{'run.json records' if 'seeds' in record else 'others have'} "
                             f"{_listed(expected)}")
    _check_counts(record, grid, expected, path)


def _check_axis_columns(rows: Sequence[dict], results: Path) -> None:
    """Each row's axis columns hold the levels its cell's id names (as results.csv writes
    them)."""
    for row in rows:
        for part in row["cell"].split(","):
            axis, named, level = part.partition("=")
            if named and axis in row and field_text(row[axis]) != level:
                raise ValueError(f"{results}: a row of cell {row['cell']!r} (seed {row['seed']}, "
                                 f"{row['metric']}) has {axis} {field_text(row[axis])!r}; its "
                                 f"cell's id says {level!r}")


def _recorded_seeds(record: Mapping, path: Path) -> list[int] | None:
    """The record's ``seeds``, sorted (``None`` when it has none)."""
    if "seeds" not in record:
        return None
    seeds = record["seeds"]
    if not isinstance(seeds, list) or not all(isinstance(seed, int) for seed in seeds):
        raise ValueError(f"{path}: seeds must be a list of integers, got {seeds!r}")
    return sorted(seeds)


def _of_grid_cell(cell: str, point: str, point_axes: tuple[str, ...]) -> bool:
    """Whether the row cell ``cell`` is the grid cell ``point`` or, for a kind that records
    points, one of its points (the grid cell's id, then the point axes)."""
    if cell == point:
        return True
    if not point_axes:
        return False
    if point == "default":
        own = cell
    elif cell.startswith(f"{point},"):
        own = cell[len(point) + 1:]
    else:
        return False
    return cell_axes([{"cell": own}]) == list(point_axes)


def _grid_words(recipe: Recipe, tier: str, cells: int) -> str:
    axes = recipe.axes(tier)
    return f"{' x '.join(axes) or 'no axes'}: {cells} cell{'s' if cells != 1 else ''}"


def _check_counts(record: Mapping, grid: list[str], seeds: list, path: Path) -> None:
    """The record's ``cells``, ``runs`` and ``cell_runs``, where it has them, count the grid's
    cells times the seeds."""
    if "cells" in record and record["cells"] != len(grid):
        raise ValueError(f"{path} records {record['cells']} cells; the {record['tier']} tier's "
                         f"grid has {len(grid)}")
    if "runs" in record and record["runs"] != len(grid) * len(seeds):
        raise ValueError(f"{path} records {record['runs']} runs; results.csv has {len(grid)} "
                         f"cells x {len(seeds)} seeds")
    if "cell_runs" not in record:
        return
    if not isinstance(record["cell_runs"], list):
        raise ValueError(f"{path}: cell_runs must be a list of runs, got "
                         f"{type(record['cell_runs']).__name__}")
    recorded = {(run.get("cell"), run.get("seed")) for run in record["cell_runs"]
                if isinstance(run, Mapping)}
    for cell in grid:
        for seed in seeds:
            if (cell, seed) not in recorded:
                raise ValueError(f"{path}: its cell_runs lack cell {cell!r} seed {seed}, which "
                                 f"results.csv holds")
    extra = sorted(recorded - {(cell, seed) for cell in grid for seed in seeds}, key=str)
    if extra:
        raise ValueError(f"{path}: its cell_runs hold cell {extra[0][0]!r} seed {extra[0][1]}, "
                         f"which results.csv lacks")


def _listed(values: Sequence) -> str:
    return ", ".join(map(str, values))
