"""results.csv and summary.csv: the tidy rows, their columns, the summary over seeds."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from contrastkit.experiments.results import (
    ROW_COLUMNS,
    cell_axes,
    clip_interval,
    metric_bounds,
    read_results,
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
        interval = mean_interval(values)
        low = max(interval.ci_low, 0.0) if entry["metric"] == "neg_sim_var" else interval.ci_low
        assert tuple(entry[key] for key in ("n", "mean", "std", "ci_low", "ci_high")) == (
            interval.n, interval.mean, interval.std, low, interval.ci_high)
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


def test_the_interval_of_a_bounded_metric_is_clipped_and_its_mean_and_std_kept():
    rows = make_rows({"batch_size": [16]}, 2, {
        "linear_top1": lambda axes, seed: [99.0, 100.0][seed],
        "converged": lambda axes, seed: float(seed),
        "neg_sim_var": lambda axes, seed: [0.001, 0.02][seed],
        "neg_sim_mean": lambda axes, seed: [-0.9, 0.9][seed],
        "train_loss": lambda axes, seed: [-5.0, 5.0][seed]})
    summary = {entry["metric"]: entry for entry in summarize(rows)}
    for metric, (low, high) in {"linear_top1": (0, 100), "converged": (0, 1),
                                "neg_sim_var": (0, math.inf), "neg_sim_mean": (-1, 1)}.items():
        entry = summary[metric]
        interval = mean_interval([row["value"] for row in rows if row["metric"] == metric])
        assert (entry["mean"], entry["std"]) == (interval.mean, interval.std)
        assert entry["ci_low"] == max(interval.ci_low, low)
        assert entry["ci_high"] == min(interval.ci_high, high)
        assert entry["ci_low"] >= low and entry["ci_high"] <= high
    assert summary["linear_top1"]["ci_high"] == 100.0 and summary["converged"]["ci_low"] == 0.0
    interval = mean_interval([-5.0, 5.0])  # an unbounded metric keeps its interval
    assert (summary["train_loss"]["ci_low"], summary["train_loss"]["ci_high"]) == (
        interval.ci_low, interval.ci_high)


def test_the_bounds_of_the_metrics():
    assert metric_bounds("knn_top5") == (0.0, 100.0) and metric_bounds("kmeans_accuracy") == (
        0.0, 100.0)
    assert metric_bounds("ncm_top1") == (0.0, 1.0)  # a fraction, not percent
    assert metric_bounds("theory_mini_var_low") == (0.0, math.inf)
    assert metric_bounds("train_loss") is None and metric_bounds("s_measured") == (0.0, 1.0)
    assert clip_interval("converged", math.nan, math.nan)[0] != clip_interval(
        "converged", math.nan, math.nan)[0]  # NaN stays NaN


GRID = {"batch_size": [16, 128], "vrns": [0.0, 30], "loss": ["simclr", "128"],
        "flag": [True, False]}


def _typed_rows():
    rows = make_rows(GRID, 2, {"neg_sim_var": _noise_value, "s": lambda axes, seed: 0.25})
    for row in rows:
        row.update(t=0.5, N=8, name="digits", empty=None)  # point axes and a fixed column
    rows[0]["value"] = math.nan
    return rows


def _noise_value(axes, seed):
    return float(np.random.default_rng([seed, axes["batch_size"]]).normal()) / 3


def test_results_csv_reads_back_into_the_rows_written_with_their_types(tmp_path):
    rows = _typed_rows()
    back = read_results(write_results(rows, tmp_path / "results.csv"), GRID)
    assert len(back) == len(rows)
    for original, read in zip(rows[1:], back[1:], strict=True):
        assert read == original
        assert {key: type(value) for key, value in read.items()} == {
            key: type(value) for key, value in original.items()}
    assert math.isnan(back[0]["value"])
    assert {(row["vrns"], type(row["vrns"])) for row in back} == {(0.0, float), (30, int)}
    assert {row["loss"] for row in back} == {"simclr", "128"}  # text, as in the grid
    assert {row["flag"] for row in back} == {True, False}


def test_without_the_grid_numbers_are_read_as_python_wrote_them(tmp_path):
    rows = [{"recipe": "r", "tier": "quick", "cell": "t=0.5,N=8", "loss": "simclr",
             "batch_size": 64, "temperature": 1e-05, "vrns": None, "seed": 0, "metric": "s",
             "value": 0.1, "t": 0.5, "N": 8, "big": 1e20, "word": "inf-like"}]
    back = read_results(write_results(rows, tmp_path / "results.csv"))
    assert back == rows
    assert [type(back[0][key]) for key in ("batch_size", "temperature", "N", "big")] == [
        int, float, int, float]


def test_a_malformed_results_csv_is_an_error_naming_it(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("")
    with pytest.raises(ValueError, match="results.csv is empty"):
        read_results(path)
    path.write_text("cell,seed\n")
    with pytest.raises(ValueError, match="lacks the column"):
        read_results(path)
    write_results(_rows(seeds=1), path)
    path.write_text(path.read_text() + "x,y\n")
    with pytest.raises(ValueError, match="has 2 fields"):
        read_results(path)
