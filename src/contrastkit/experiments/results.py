"""The tidy results of a reproduction and their summary over seeds.

A row is one cell x seed x metric: ``{"recipe", "tier", "cell", "loss", "batch_size",
"temperature", "vrns", "seed", "metric", "value"}`` plus one column per other axis of the
recipe, absent values ``None``. A cell's id names its axes (``batch_size=16,vrns=30.0``); the
axes of a set of rows are read from the ids, so a column that holds a fixed setting (``loss``
of a recipe with one loss) is not mistaken for an axis.

:func:`read_results` reads results.csv back into the rows that were written (seeds ``int``,
values ``float``, axis values typed as the recipe's grid types them), so that a report can be
regenerated from the CSV alone. The t-interval of a bounded metric (:func:`metric_bounds`:
accuracies in [0, 100] %, shares and ``converged`` in [0, 1], cosine similarities in [-1, 1],
variances >= 0) is clipped to its range in the summary; its mean and std are kept.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from numbers import Real
from pathlib import Path

from contrastkit.experiments.stats import mean_interval
from contrastkit.files import write_text_atomic

ROW_COLUMNS = ("recipe", "tier", "cell", "loss", "batch_size", "temperature", "vrns", "seed",
               "metric", "value")
SUMMARY_STATISTICS = ("n", "mean", "std", "ci_low", "ci_high")
#: Accuracies recorded in percent.
PERCENT_METRICS = ("linear_top1", "linear_top5", "knn_top1", "knn_top5", "half_linear_top1",
                   "kmeans_accuracy")
#: Metrics that are shares of a whole, in [0, 1] (``ncm_top1`` is an accuracy as a fraction;
#: ``s`` of the sigmoid paper is a cosine similarity mapped to [0, 1]).
UNIT_METRICS = ("converged", "margin_fraction", "ncm_top1", "s_measured", "s_theory")
#: Cosine similarities and their means, in [-1, 1].
SIMILARITY_METRICS = ("neg_sim_mean", "pos_sim_mean", "train_neg_sim_mean",
                      "train_pos_sim_mean", "full_pos_mean", "full_neg_mean", "pos_sim",
                      "neg_sim")


def cell_axes(rows: Iterable[dict]) -> list[str]:
    """The axis names of the cells of ``rows``, in the order their ids name them."""
    axes: dict[str, None] = {}
    for row in rows:
        axes.update(dict.fromkeys(_axis_names(row["cell"])))
    return list(axes)


def _axis_names(cell_id: str) -> list[str]:
    """``"batch_size=16,vrns=30.0"`` -> ``["batch_size", "vrns"]`` (an empty id: no axes)."""
    return [part.split("=", 1)[0] for part in cell_id.split(",") if part]


def same_level(a: object, b: object) -> bool:
    """Whether two axis values are the same level (numbers to within rounding: 30 and 30.0
    are; a number and its text are not)."""
    if isinstance(a, Real) and isinstance(b, Real) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def metric_bounds(metric: str) -> tuple[float, float] | None:
    """The range a metric's values cannot leave, or ``None`` for an unbounded one: ``(0, 100)``
    for the accuracies in percent (:data:`PERCENT_METRICS`), ``(0, 1)`` for the shares
    (:data:`UNIT_METRICS`), ``(-1, 1)`` for cosine similarities (:data:`SIMILARITY_METRICS`),
    ``(0, inf)`` for a variance (a name ending in ``_var`` or holding ``_var_``, e.g.
    ``neg_sim_var``, ``theory_mini_var_low``)."""
    if metric in PERCENT_METRICS:
        return 0.0, 100.0
    if metric in UNIT_METRICS:
        return 0.0, 1.0
    if metric in SIMILARITY_METRICS:
        return -1.0, 1.0
    if metric.endswith("_var") or "_var_" in metric:
        return 0.0, math.inf
    return None


def clip_interval(metric: str, low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` clipped to :func:`metric_bounds` (NaN stays NaN)."""
    bounds = metric_bounds(metric)
    if bounds is None:
        return low, high

    def clip(value: float) -> float:
        return value if math.isnan(value) else min(max(value, bounds[0]), bounds[1])

    return clip(low), clip(high)


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
    seed std and the interval are NaN), the interval clipped to the metric's range
    (:func:`clip_interval`). A cell x seed x metric given twice is a ``ValueError``,
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
    low, high = clip_interval(row["metric"], interval.ci_low, interval.ci_high)
    return {"cell": row["cell"], **{axis: row.get(axis) for axis in axes},
            "metric": row["metric"], **interval._asdict(), "ci_low": low, "ci_high": high}


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
        writer.writerow([field_text(row.get(column)) for column in columns])
    path = Path(path)
    write_text_atomic(path, buffer.getvalue())
    return path


def field_text(value: object) -> str:
    """The field results.csv holds for ``value``: empty for ``None`` and NaN, the shortest
    round-tripping text of a float, else the value's text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


#: The columns of results.csv that are not axes, and how their text is read back.
_FIXED_TYPES = {"recipe": str, "tier": str, "cell": str, "metric": str, "seed": int}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*(e[+-]?[0-9]+)?|[0-9]+e[+-]?[0-9]+|inf)")


def read_results(path: str | Path, grid: Mapping[str, Sequence] | None = None) -> list[dict]:
    """The rows :func:`write_results` wrote to ``path``, typed back: ``recipe``, ``tier``,
    ``cell``, ``metric`` text, ``seed`` an ``int``, ``value`` a ``float`` (an empty field is
    NaN); every other column's empty field is ``None``. A column that is an axis of ``grid``
    (the tier's axes, :meth:`Recipe.axes`) takes the grid's level whose text the field is
    (``"128"`` -> ``128``, ``"30.0"`` -> ``30.0``, ``"simclr"`` -> ``"simclr"``); any other field
    is an ``int`` if it reads as one, a ``float`` if it reads as Python writes a float, and
    text otherwise. Each row has the file's columns, in its order."""
    levels = {axis: {field_text(level): level for level in values}
              for axis, values in (grid or {}).items()}
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        try:
            columns = next(reader)
        except StopIteration:
            raise ValueError(f"{path} is empty; expected the header of results.csv") from None
        missing = [column for column in ROW_COLUMNS if column not in columns]
        if missing:
            raise ValueError(f"{path} lacks the column(s) {', '.join(missing)} of results.csv")
        rows = []
        for number, fields in enumerate(reader, start=2):
            if len(fields) != len(columns):
                raise ValueError(f"{path} line {number} has {len(fields)} fields; the header "
                                 f"has {len(columns)}")
            try:
                rows.append({column: _typed(column, text, levels.get(column))
                             for column, text in zip(columns, fields, strict=True)})
            except ValueError as error:
                raise ValueError(f"{path} line {number}: {error}") from None
    return rows


def _typed(column: str, text: str, levels: Mapping[str, object] | None) -> object:
    """One field of results.csv as the value it was written from (see :func:`read_results`)."""
    if column == "value" or column in _FIXED_TYPES:
        kind = float if column == "value" else _FIXED_TYPES[column]
        if column == "value" and text == "":
            return math.nan
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"{column} must be {'an integer' if kind is int else 'a number'}, "
                             f"got {text!r}") from None
    if text == "":
        return None
    if levels is not None and text in levels:
        return levels[text]
    if _INTEGER.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text
