"""The numbers the committed evidence of a recipe produces, and the numbers its recipe states.

``evidence(folder)`` reads ``docs/reproduction/<recipe>-cpu/`` (results.csv, summary.csv,
run.json and the generated part of report.md, which tests/experiments/test_committed_evidence.py
regenerates from the first two) and returns every value a page may quote from it:

- each cell's mean, standard deviation, interval ends and half-width, and per metric the
  difference of the means of two cells that differ in one axis;
- the extremes over the runs of each metric and of each run's convergence quantities (how far
  its probe moved over the second half, the share of the loss's whole fall made there): per
  cell and over all runs, and each cell's mean of a convergence quantity;
- counts: cells, seeds, runs, runs that did not converge, claims and verdicts (the report's);
- the record's schedule (steps and epochs per cell), its minutes (wall and cell time), and every
  number the generated report prints (p-values, effects, d_z, minimum detectable effects).

``settings(recipe)`` gives the numbers the recipe states outside its paper values (grid levels,
tier settings, tolerances, measured minutes), and ``paper(recipe)`` the paper values it quotes.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections import defaultdict
from functools import cache
from pathlib import Path

import yaml

from contrastkit.experiments.recipe import RECIPES
from tests.doc_numbers import numbers as page_numbers

DOCS = Path(__file__).resolve().parent.parent / "docs"
REPRODUCTION = DOCS / "reproduction"
#: Columns of results.csv and summary.csv that are not a cell's axes.
_NOT_AXES = {"recipe", "tier", "cell", "seed", "metric", "value", "n", "mean", "std", "ci_low",
             "ci_high"}


def folder(recipe: str, tier: str = "cpu") -> Path:
    """The committed evidence folder of ``recipe``'s tier."""
    return REPRODUCTION / f"{recipe.replace('/', '-')}-{tier}"


def _numeric_leaves(value, skip=()) -> list[float]:
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for key, item in value.items() if key not in skip
                for x in _numeric_leaves(item, skip)]
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _numeric_leaves(item, skip)]
    if isinstance(value, str):
        try:
            return [float(value)]
        except ValueError:
            return []
    return []


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _pair_numbers(means: dict[tuple, float]) -> list[float]:
    """Differences of the means of cells (one metric) that differ in one axis."""
    out = []
    width = len(next(iter(means), ()))
    for axis in range(width):
        groups = defaultdict(list)
        for key, mean in means.items():
            groups[key[:axis] + key[axis + 1:]].append(mean)
        for group in groups.values():
            for x, y in itertools.permutations(group, 2):
                out.append(x - y)
    return out


def _extremes(groups: dict) -> list[float]:
    """The smallest and the largest value of each group."""
    return [x for group in groups.values() if group for x in (min(group), max(group))]


def _runs(rows: list[dict]) -> dict[tuple, dict[str, float]]:
    runs = defaultdict(dict)
    for row in rows:
        runs[(row["cell"], row["seed"])][row["metric"]] = float(row["value"])
    return runs


def _convergence(values: dict[str, float]) -> dict[str, float]:
    """A run's convergence quantities: the probe's move over the second half, the second
    half's share of the loss's whole fall (in %)."""
    out = {}
    if {"linear_top1", "half_linear_top1"} <= values.keys():
        out["probe_move"] = abs(values["linear_top1"] - values["half_linear_top1"])
    if {"first_loss", "half_loss", "train_loss"} <= values.keys():
        fall = values["first_loss"] - values["train_loss"]
        if fall:
            out["loss_share"] = 100 * (values["half_loss"] - values["train_loss"]) / fall
    return out


def _per_run(rows: list[dict]) -> list[float]:
    """The extremes of each metric (and convergence quantity) over the runs: per cell, over
    every run; and each cell's mean (of a convergence quantity too)."""
    per_cell, overall = defaultdict(list), defaultdict(list)
    for (cell, _), values in _runs(rows).items():
        for metric, value in {**values, **_convergence(values)}.items():
            per_cell[cell, metric].append(value)
            overall[metric].append(value)
    cell_means = [sum(values) / len(values) for values in per_cell.values()]
    return _extremes(per_cell) + _extremes(overall) + cell_means


def _generated_report(path: Path) -> str:
    """report.md without its hand-written part (the recipe's notes)."""
    text = path.read_text()
    return text.split("\n## Notes\n")[0]


@cache
def evidence(recipe: str) -> frozenset[float]:
    """Every value the committed cpu-tier evidence of ``recipe`` produces (module docstring);
    empty if it has none."""
    where = folder(recipe)
    if not (where / "results.csv").exists():
        return frozenset()
    rows, summary = _rows(where / "results.csv"), _rows(where / "summary.csv")
    record = json.loads((where / "run.json").read_text())
    values = _per_run(rows)
    axes = [key for key in rows[0] if key not in _NOT_AXES]
    means = defaultdict(dict)
    for row in summary:
        values += [float(row[key]) for key in ("n", "mean", "std", "ci_low", "ci_high")
                   if row[key] not in ("", "nan")]
        if row["ci_low"] not in ("", "nan"):
            values.append((float(row["ci_high"]) - float(row["ci_low"])) / 2)
        values += _numeric_leaves([row[axis] for axis in axes if axis in row])
        means[row["metric"]][tuple(row.get(axis, "") for axis in axes)] = float(row["mean"])
    for metric_means in means.values():
        values += _pair_numbers(metric_means) + _extremes({0: list(metric_means.values())})
    converged = [float(row["value"]) for row in rows if row["metric"] == "converged"]
    runs = {(row["cell"], row["seed"]) for row in rows}
    values += [len(runs), len({row["cell"] for row in rows}), len(record["seeds"]),
               converged.count(0.0), len(converged)]
    values += _numeric_leaves(record, skip=("recipe_content", "protocol", "datasets"))
    values += [record[key] / 60 for key in ("seconds", "cell_seconds") if record.get(key)]
    values += [number.value for number in
               page_numbers(_generated_report(where / "report.md"), set())]
    return frozenset(values)


@cache
def settings(recipe: str) -> frozenset[float]:
    """The numbers ``recipe`` states other than its paper values: its grid, base, tiers (their
    settings, seeds, measured minutes), claims (levels, tolerances, thresholds), evaluation."""
    stated = {key: value for key, value in _recipe_yaml(recipe).items() if key != "paper"}
    return frozenset(_numeric_leaves(stated))


def _recipe_yaml(recipe: str) -> dict:
    return yaml.safe_load((RECIPES / f"{recipe}.yaml").read_text())


@cache
def paper(recipe: str) -> frozenset[float]:
    """The paper values ``recipe`` quotes (and the differences of two that differ in one
    setting), and its protocol's paper settings."""
    source = _recipe_yaml(recipe)
    quoted = source.get("paper", [])
    means = defaultdict(dict)
    for row in quoted:
        axes = tuple(sorted((key, str(value)) for key, value in row.items()
                            if key not in ("metric", "value")))
        means[row["metric"]][axes] = row["value"]
    differences = []
    for metric_means in means.values():
        keys = sorted({key for axes in metric_means for key, _ in axes})
        differences += _pair_numbers({tuple(dict(axes).get(key) for key in keys): value
                                      for axes, value in metric_means.items()})
    return frozenset(_numeric_leaves(quoted) + differences
                     + _numeric_leaves(source.get("protocol", {}).get("settings", {})))
