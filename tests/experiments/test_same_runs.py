"""Cells of a sweep that are the same run (LMCL's polarization_reduction crossed with
polarization = 0): they are the same run bit for bit, the sweep trains it once and the twin
takes its folder and result, also when the sweep was stopped in between (a twin that finished
keeps its result); cells that differ in what they compute are never twins."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import contrastkit.train.loop as loop
from contrastkit.experiments import load_recipe, run_recipe, runner
from contrastkit.experiments.reproduce import run_record
from contrastkit.experiments.same_runs import twins
from contrastkit.train.config import without_inert
from tests.experiments.tiny_recipes import PRETRAIN, recipe, write_recipe

REAL_PRETRAIN = loop.pretrain
#: What a run measures of its machine rather than computes.
TIMINGS = ("seconds", "memory")


def reduction_recipe(tmp_path, polarization: float):
    """One batch size, the two reductions at ``polarization``, one seed of one epoch."""
    content = recipe(PRETRAIN, grid={"batch_size": [128], "polarization": [polarization],
                                     "polarization_reduction": ["mean", "sum"]})
    content["tiers"]["quick"]["seeds"] = 1
    return load_recipe(write_recipe(tmp_path, content))


def count_pretrain(monkeypatch) -> list:
    calls = []

    def pretrain(config, resume=None, **options):
        calls.append(config.run_dir)
        return REAL_PRETRAIN(config, resume=resume, **options)

    monkeypatch.setattr(loop, "pretrain", pretrain)
    return calls


def computed(metrics: dict) -> dict:
    return {name: value for name, value in metrics.items()
            if not any(word in name for word in TIMINGS)}


def test_only_the_reduction_of_no_polarization_is_inert():
    settings = {"polarization": 0.0, "polarization_reduction": "sum", "temperature": 0.5}
    assert without_inert(settings) == {**settings, "polarization_reduction": "mean"}
    active = {**settings, "polarization": 0.1}
    assert without_inert(active) == active


def test_twins_are_the_same_run_bit_for_bit(tmp_path):
    """The premise of sharing: trained separately, the two cells compute the same numbers."""
    mean, total = reduction_recipe(tmp_path, 0.0).cells("quick")
    first, second = (runner.run_cell(cell, tmp_path / "out") for cell in (mean, total))
    assert computed(first["metrics"]) == computed(second["metrics"])
    assert "same_run_as" not in first and "same_run_as" not in second


def test_a_sweep_trains_a_shared_run_once_and_the_twin_takes_it(tmp_path, monkeypatch):
    tiny = reduction_recipe(tmp_path, 0.0)
    mean, total = tiny.cells("quick")
    out = tmp_path / "out"
    calls = count_pretrain(monkeypatch)
    rows = run_recipe(tiny, "quick", out, progress=False)
    assert calls == [mean.folder(out)]
    source, twin = runner.read_result(mean, out), runner.read_result(total, out)
    assert twin["same_run_as"] == mean.cell_id and twin["seconds"] == 0.0
    assert twin["metrics"] == source["metrics"] and twin["cell"]["cell_id"] == total.cell_id
    assert twin["cell"]["steps"] == source["cell"]["steps"] > 0
    assert twin["cell"]["epochs"] == source["cell"]["epochs"] == 1
    assert twin["cell"]["settings"]["polarization_reduction"] == "sum"
    files = {path.name for path in total.folder(out).iterdir()}
    assert {"eval.json", "metrics.jsonl", "config.yaml"} <= files
    assert not any(name.endswith(".pt") for name in files)
    assert json.loads((total.folder(out) / "cell.json").read_text()) == total.identity()
    values = {}
    for row in rows:
        values.setdefault(row["metric"], set()).add(row["value"])
    assert {len(found) for found in values.values()} == {1}
    record = run_record(tiny, "quick", out, [mean, total], datetime.now(timezone.utc), 1.0, "x")
    assert record["cell_runs"][1]["same_run_as"] == mean.cell_id
    assert record["cell_seconds"] == source["seconds"]


def test_a_finished_twin_gives_its_run_on_restart_and_keeps_its_own_result(tmp_path,
                                                                          monkeypatch):
    """A sweep stopped after one of two twins finished (or made before runs were shared)
    trains nothing more: the finished one, whichever it is, gives the other its run."""
    tiny = reduction_recipe(tmp_path, 0.0)
    mean, total = tiny.cells("quick")
    out = tmp_path / "out"
    own = runner.run_cell(total, out)
    calls = count_pretrain(monkeypatch)
    run_recipe(tiny, "quick", out, progress=False)
    assert calls == [] and runner.read_result(total, out) == own
    adopted = runner.read_result(mean, out)
    assert adopted["same_run_as"] == total.cell_id and adopted["metrics"] == own["metrics"]


def test_cells_that_compute_different_runs_are_not_twins(tmp_path):
    cells = reduction_recipe(tmp_path, 0.1).cells("quick")
    assert twins(cells, finished=set()) == {}
    seeds = load_recipe(write_recipe(tmp_path, recipe(PRETRAIN), "seeds")).cells("quick")
    assert twins(seeds, finished=set()) == {}
