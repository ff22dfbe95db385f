"""The tidy results of a reproduction and their summary over seeds.

A row is one cell x seed x metric: ``{"recipe", "tier", "cell", "loss", "batch_size",
"temperature", "vrns", "seed", "metric", "value"}`` plus one column per other axis of the
recipe, absent values ``None``. A cell's id names its axes (``batch_size=16,vrns=30.0``); the
axes of a set of rows are read from the ids, so a column that holds a fixed setting (``loss``
of a recipe with one loss) is not mistaken for an axis.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from numbers import Real
from pathlib import Path

from contrastkit.experiments.stats import mean_interval
from contrastkit.train.folder_io import write_text_atomic

ROW_COLUMNS = ("recipe", "tier", "cell", "loss", "batch_size", "temperature", "vrns", "seed",
               "metric", "value")
SUMMARY_STATISTICS = ("n", "mean", "std", "ci_low", "ci_high")


def cell_axes(rows: Iterable[dict]) -> list[str]:
    """The axis names of the cells of ``rows``, in the order their ids name them."""
    axes: dict[str, None] = {}
    for row in rows:
        axes.update(dict.fromkeys(_axis_names(row["cell"])))
    return list(axes)


def _axis_names(cell_id: str) -> list[str]:
    """``"batch_size=16,vrns=30.0"`` -> ``["batch_size", "vrns"]`` (an empty id: no axes)."""
    return [part.split("=", 1)[0] for part in cell_id.split(",") if part]


def same_level(a, b) -> bool:
    """Whether two axis values are the same level (numbers to within rounding: 30 and 30.0
    are; a number and its text are not)."""
    if isinstance(a, Real) and isinstance(b, Real) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def write_results(rows: Sequence[dict], path: Path) -> Path:
    """Write ``rows`` to ``path`` as CSV: the ten columns of :data:`ROW_COLUMNS` first, then
    every other column of the rows (the other axes) sorted; ``None`` and NaN are empty fields. The
    file is written atomically (a failed write leaves no partial file)."""
    extra = sorted({key for row in rows for key in row} - set(ROW_COLUMNS))
    return _write_csv(path, [*ROW_COLUMNS, *extra], rows)


def summarize(rows: Sequence[dict]) -> list[dict]:
    """One dict per cell x metric, in the order the rows first name them: ``cell``, the cell's
    axis values, ``metric``, and :func:`~contrastkit.experiments.stats.mean_interval` over the
    seeds (``n, mean, std, ci_low, ci_high``: a 95 % t-interval, std with ``ddof=1``; with one
    seed std and the interval are NaN). A cell x seed x metric given twice is a ``ValueError``,
    and so is an axis named like a statistic or column of the summary (its values would be
    overwritten).
    """
    axes = cell_axes(rows)
    clashing = [axis for axis in axes if axis in ("cell", "metric", *SUMMARY_STATISTICS)]
    if clashing:
        raise ValueError(f"results: axis {clashing[0]!r} has the name of a summary column "
                         f"(cell, metric, {', '.join(SUMMARY_STATISTICS)}); rename the axis")
    groups: dict[tuple[str, str], dict] = {}
    for row in rows:
        group = groups.setdefault((row["cell"], row["metric"]), {"row": row, "values": {}})
        if row["seed"] in group["values"]:
            raise ValueError(f"results: cell {row['cell']!r} seed {row['seed']} metric "
                             f"{row['metric']!r} appears twice")
        group["values"][row["seed"]] = row["value"]
    return [_summary_row(axes, group["row"], list(group["values"].values()))
            for group in groups.values()]


def _summary_row(axes: list[str], row: dict, values: list[float]) -> dict:
    try:
        interval = mean_interval(values)
    except ValueError as error:
        raise ValueError(f"results: cell {row['cell']!r} metric {row['metric']!r}: {error}"
                         ) from None
    return {"cell": row["cell"], **{axis: row.get(axis) for axis in axes},
            "metric": row["metric"], **interval._asdict()}


def write_summary(summary: Sequence[dict], path: Path) -> Path:
    """Write :func:`summarize`'s dicts to ``path`` as CSV, columns in their order; NaN (the
    spread of a single seed) and ``None`` are empty fields. Written atomically."""
    columns = list(dict.fromkeys(key for row in summary for key in row))
    return _write_csv(path, columns, summary)


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[dict]) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_field(row.get(column)) for column in columns])
    path = Path(path)
    write_text_atomic(path, buffer.getvalue())
    return path


def _field(value) -> str:
    """A CSV field: empty for ``None`` and NaN, the shortest round-tripping text of a float."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)
