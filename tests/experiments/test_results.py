"""results.csv and summary.csv: the tidy rows, their columns, the summary over seeds."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from contrastkit.experiments.results import (
    ROW_COLUMNS,
    cell_axes,
    summarize,
    write_results,
    write_summary,
)
from contrastkit.experiments.stats import mean_interval
from tests.experiments.synthetic_rows import make_rows


def _noise(axes, seed):
    return float(np.random.default_rng([seed, axes["batch_size"], int(axes["m"])]).normal())


def _rows(seeds=3):
    return make_rows({"batch_size": [16, 128], "m": [2, 4], "d": [3]}, seeds,
                     {"neg_sim_var": _noise, "theory": lambda axes, seed: 1 / 3},
                     fixed={"loss": "simclr"})


def _read(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_results_csv_has_the_ten_columns_then_the_other_axes_sorted(tmp_path):
    rows = _rows()
    path = write_results(rows, tmp_path / "results.csv")
    table = _read(path)
    assert table[0] == [*ROW_COLUMNS, "d", "m"]
    assert len(table) == 1 + len(rows)
    first = dict(zip(table[0], table[1], strict=True))
    assert first["temperature"] == "" and first["loss"] == "simclr"
    assert float(first["value"]) == rows[0]["value"]  # the float survives the text


def test_results_csv_writes_numpy_floats_as_numbers(tmp_path):
    rows = _rows(seeds=1)
    rows[0]["value"] = np.float64(0.125)
    table = _read(write_results(rows, tmp_path / "results.csv"))
    assert table[1][ROW_COLUMNS.index("value")] == "0.125"


def test_the_axes_come_from_the_cell_ids_not_from_the_filled_columns():
    assert cell_axes(_rows()) == ["batch_size", "m", "d"]


def test_the_summary_has_one_row_per_cell_and_metric_with_scipy_checked_intervals():
    rows = _rows()
    summary = summarize(rows)
    assert len(summary) == 4 * 2
    for entry in summary:
        values = [row["value"] for row in rows
                  if row["cell"] == entry["cell"] and row["metric"] == entry["metric"]]
        assert list(entry) == ["cell", "batch_size", "m", "d", "metric", "n", "mean", "std",
                               "ci_low", "ci_high"]
        assert tuple(entry[key] for key in ("n", "mean", "std", "ci_low", "ci_high")) == (
            mean_interval(values))
    assert {entry["metric"] for entry in summary} == {"neg_sim_var", "theory"}


def test_a_single_seed_leaves_the_spread_empty_in_summary_csv(tmp_path):
    summary = summarize(_rows(seeds=1))
    assert math.isnan(summary[0]["std"])
    table = _read(write_summary(summary, tmp_path / "summary.csv"))
    entry = dict(zip(table[0], table[1], strict=True))
    assert (entry["n"], entry["std"], entry["ci_low"], entry["ci_high"]) == ("1", "", "", "")
    assert float(entry["mean"]) == summary[0]["mean"]


def test_summary_csv_round_trips_the_numbers(tmp_path):
    summary = summarize(_rows())
    table = _read(write_summary(summary, tmp_path / "summary.csv"))
    assert table[0] == list(summary[0])
    for entry, line in zip(summary, table[1:], strict=True):
        assert float(dict(zip(table[0], line, strict=True))["ci_high"]) == entry["ci_high"]


def test_a_repeated_seed_is_an_error_naming_the_cell():
    rows = _rows()
    rows.append(dict(rows[0]))
    with pytest.raises(ValueError, match="batch_size=16,m=2,d=3.*seed 0.*twice"):
        summarize(rows)


def test_a_non_finite_value_is_an_error_naming_the_cell_and_metric():
    rows = _rows()
    rows[0]["value"] = math.nan
    with pytest.raises(ValueError, match="cell 'batch_size=16,m=2,d=3' metric 'neg_sim_var'"):
        summarize(rows)


def test_an_unwritable_path_is_a_value_error_and_leaves_no_file(tmp_path):
    path = tmp_path / "missing" / "results.csv"
    with pytest.raises(ValueError, match="results.csv"):
        write_results(_rows(), path)
    assert not path.parent.exists()


@pytest.mark.parametrize("axis", ["n", "mean"])
def test_an_axis_named_like_a_summary_statistic_is_an_error(axis):
    rows = [{"cell": f"{axis}=8,t=0.5", axis: 8, "t": 0.5, "seed": seed, "metric": "s",
             "value": 0.1 * seed} for seed in range(2)]
    with pytest.raises(ValueError, match=f"axis '{axis}' has the name of a summary column"):
        summarize(rows)
