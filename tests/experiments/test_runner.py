"""The sweep runner: run folders and result.json, a finished cell skipped and an interrupted
one resumed (a killed sweep restarted repeats nothing), parallel jobs equal to one job, the
submitit launcher, simulate cells against the theory, tidy rows, the dry run, progress."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import sys
from pathlib import Path

import pytest
import torch

import contrastkit.train.loop as loop
from contrastkit.experiments import (
    launchers,
    load_recipe,
    recipe_checks,
    recipe_names,
    run_recipe,
    runner,
    tidy,
)
from contrastkit.experiments.convergence import UNFITTED
from contrastkit.experiments.kinds import cell_points
from contrastkit.experiments.progress import SweepProgress
from contrastkit.experiments.recipe import train_size
from contrastkit.theory import minibatch_variance_bounds
from contrastkit.train import PretrainConfig
from tests.data import archives
from tests.experiments.fake_data import FAKE_DATA, datasets_of, use_small_captioned_shapes
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, recipe, write_recipe

SRC = Path(__file__).resolve().parents[2] / "src"
REAL_PRETRAIN = loop.pretrain


class Killed(Exception):
    pass


@pytest.fixture
def tiny(tmp_path):
    return load_recipe(write_recipe(tmp_path, PRETRAIN))


def spy_pretrain(monkeypatch, fail_at_call=None, callback=None):
    """Replace ``pretrain`` by one that records its calls (run folder, resume), raises
    :class:`Killed` instead of running at call number ``fail_at_call``, and passes
    ``callback`` to the real one."""
    calls = []

    def pretrain(config, resume=None, **options):
        calls.append((config.run_dir, resume))
        if len(calls) == fail_at_call:
            raise Killed
        if callback is not None:
            options["callbacks"] = [callback]
        return REAL_PRETRAIN(config, resume=resume, **options)

    monkeypatch.setattr(loop, "pretrain", pretrain)
    return calls


def one_epoch_metrics(recipe) -> list[str]:
    """The metrics a one-epoch cell's rows hold: a run of one epoch has no curves or half-way
    probe to record beside its verdict (only the rule's version)."""
    return [metric for metric in runner.row_metrics(recipe)
            if metric not in ("half_linear_top1", UNFITTED) and not metric.startswith("drift_")]


def test_each_cell_is_a_run_folder_with_its_result_written_last(tiny, tmp_path):
    rows = run_recipe(tiny, "quick", tmp_path / "out", progress=False)
    for cell in tiny.cells("quick"):
        folder = tmp_path / "out" / "cells" / cell.cell_id / f"seed-{cell.seed}"
        assert {"config.yaml", "last.pt", "eval.json", "result.json"} <= {
            path.name for path in folder.iterdir()}
        result = json.loads((folder / "result.json").read_text())
        assert result["cell"]["cell_id"] == cell.cell_id and result["cell"]["seed"] == cell.seed
        assert result["cell"]["epochs"] == 1 and result["seconds"] > 0
        evaluation = json.loads((folder / "eval.json").read_text())
        assert result["metrics"]["neg_sim_var"] == evaluation["neg_sim_var"]
    assert len(rows) == len(tiny.cells("quick")) * len(one_epoch_metrics(tiny))


@pytest.mark.slow
def test_a_killed_sweep_restarted_runs_only_the_unfinished_cells(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    calls = spy_pretrain(monkeypatch, fail_at_call=3)
    with pytest.raises(Killed):
        run_recipe(tiny, "quick", out, progress=False)
    cells = tiny.cells("quick")
    assert [runner.is_finished(cell, out) for cell in cells] == [True, True, False, False]
    before = [runner.read_result(cell, out) for cell in cells[:2]]

    calls = spy_pretrain(monkeypatch)
    rows = run_recipe(tiny, "quick", out, progress=False)
    assert [run_dir for run_dir, _ in calls] == [cell.folder(out) for cell in cells[2:]]
    assert [runner.read_result(cell, out) for cell in cells[:2]] == before
    assert len(rows) == len(cells) * len(one_epoch_metrics(tiny))
    assert {(row["cell"], row["seed"]) for row in rows} == {(c.cell_id, c.seed) for c in cells}
    assert all(math.isfinite(row["value"]) for row in rows)


def test_a_cell_killed_mid_training_is_resumed_not_restarted(tmp_path, monkeypatch):
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 3})
    cell = load_recipe(write_recipe(tmp_path, content)).cells("quick")[0]
    out = tmp_path / "out"

    def kill_after_first_epoch(completed, metrics):
        if completed == 1:
            raise Killed

    spy_pretrain(monkeypatch, callback=kill_after_first_epoch)
    with pytest.raises(Killed):
        runner.run_cell(cell, out)
    assert (cell.folder(out) / "last.pt").is_file() and not runner.is_finished(cell, out)

    trained = []
    calls = spy_pretrain(monkeypatch, callback=lambda completed, metrics: trained.append(completed))
    result = runner.run_cell(cell, out)
    assert calls == [(cell.folder(out), "last")]
    assert trained == [2, 3]  # epoch 1 was not trained again
    assert result["cell"]["epochs"] == 3 and runner.is_finished(cell, out)
    lines = (cell.folder(out) / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epochs_completed"] for line in lines] == [1, 2, 3]


def test_a_finished_cell_is_read_not_run_again(tiny, tmp_path, monkeypatch):
    cell = tiny.cells("quick")[0]
    first = runner.run_cell(cell, tmp_path)
    calls = spy_pretrain(monkeypatch)
    assert runner.run_cell(cell, tmp_path) == first and calls == []


@pytest.mark.slow
def test_parallel_jobs_give_the_results_of_one_job(tiny, tmp_path):
    """Each of 2 jobs runs with cpu_count // 2 threads; the one-job run gets as many, since
    the thread count changes float rounding, which an epoch of training amplifies to ~1e-3.
    With equal thread counts the seeded runs agree to rounding of the same operations."""
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // 2))
    try:
        one = run_recipe(tiny, "quick", tmp_path / "one", jobs=1, progress=False)
    finally:
        torch.set_num_threads(threads)
    two = run_recipe(tiny, "quick", tmp_path / "two", jobs=2, progress=False)
    assert [{k: v for k, v in row.items() if k != "value"} for row in one] == [
        {k: v for k, v in row.items() if k != "value"} for row in two]
    for a, b in zip(one, two, strict=True):
        assert b["value"] == pytest.approx(a["value"], rel=1e-9, abs=1e-12), a


@pytest.mark.slow
def test_the_submitit_launcher_runs_each_cell_as_a_job(tmp_path, monkeypatch):
    submitit = pytest.importorskip("submitit")
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"]["seeds"] = 1
    tiny = load_recipe(write_recipe(tmp_path, content))
    executors = []

    def local_executor(folder, timeout_min):
        executors.append(submitit.LocalExecutor(folder=folder))
        executors[-1].update_parameters(timeout_min=timeout_min)
        return executors[-1]

    monkeypatch.setattr(launchers, "submitit_executor", local_executor)
    monkeypatch.setenv("PYTHONPATH", str(SRC))  # the job's process imports this contrastkit
    rows = run_recipe(tiny, "quick", tmp_path / "out", launcher="submitit", progress=False)
    assert len(executors) == 1 and executors[0].folder == (tmp_path / "out" / "submitit")
    assert any(executors[0].folder.glob("*_result.pkl"))  # the cell ran as a submitit job
    assert len(rows) == len(one_epoch_metrics(tiny)) and runner.is_finished(
        tiny.cells("quick")[0], tmp_path / "out")


def test_the_submitit_launcher_without_submitit_names_the_extra(tiny, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)
    with pytest.raises(ValueError, match=r"pip install 'contrastkit\[launch\]'"):
        run_recipe(tiny, "quick", tmp_path, launcher="submitit")
    assert not (tmp_path / "cells").exists()


@pytest.mark.parametrize("jobs, launcher, message", [
    (0, "local", "jobs must be >= 1, got 0"),
    (1.5, "local", "jobs must be an integer >= 1, got 1.5"),
    (1, "slurm", r"launcher must be one of \('local', 'submitit'\), got 'slurm'"),
])
def test_bad_launch_settings_are_named(tiny, tmp_path, jobs, launcher, message):
    with pytest.raises(ValueError, match=message):
        run_recipe(tiny, "quick", tmp_path, jobs=jobs, launcher=launcher)


def test_a_simulate_cell_records_the_runs_and_the_theory(tmp_path):
    simulation = load_recipe(write_recipe(tmp_path, SIMULATE))
    rows = run_recipe(simulation, "quick", tmp_path / "out", progress=False)
    values = {row["metric"]: row["value"] for row in rows}
    bounds = minibatch_variance_bounds(4, 2)
    assert values["theory_full_neg_mean"] == pytest.approx(-1 / 3)
    assert (values["theory_mini_var_low"], values["theory_mini_var_high"]) == (
        bounds.low, bounds.high)
    assert values["full_neg_mean"] == pytest.approx(values["theory_full_neg_mean"], abs=1e-4)
    assert bounds.low - 1e-4 <= values["mini_neg_var"] <= bounds.high + 1e-4
    assert {row["batch_size"] for row in rows} == {None} and rows[0]["loss"] == "simclr"
    assert (tmp_path / "out" / "cells" / "default" / "seed-0" / "result.json").is_file()


def test_tidy_rows_have_the_fixed_columns_then_the_other_axes(tmp_path):
    content = recipe(SIMULATE, grid={"m": [2, 4], "lr": [0.1]})
    simulation = load_recipe(write_recipe(tmp_path, content))
    cells = simulation.cells("quick")
    results = {runner.key(c): {"metrics": {m: 0.5 for m in SIMULATE["metrics"]}} for c in cells}
    rows = runner.tidy_rows(simulation, "quick", cells, results)
    assert list(rows[0]) == [*tidy.ROW_COLUMNS, "m", "lr"]
    assert [(row["cell"], row["m"]) for row in rows[::len(SIMULATE["metrics"])]] == [
        ("m=2,lr=0.1", 2), ("m=4,lr=0.1", 4)]
    assert rows[0]["temperature"] == 0.5 and rows[0]["vrns"] is None


def test_the_dry_run_builds_every_cell_and_reports_the_first_error(tiny, tmp_path):
    archives.write_cifar10_archive(tmp_path / "data")  # the dry run reads the data once
    runner.check_cells(tiny, tiny.cells("paper", None, str(tmp_path / "data")), tmp_path)
    assert not (tmp_path / "cells").exists()
    content = recipe(PRETRAIN, grid={"loss": ["simclr", "siglip"]})
    content["base"]["temperature"] = 0.5
    bad = load_recipe(write_recipe(tmp_path, content))
    with pytest.raises(ValueError, match="cell loss=siglip of tiny .*temperature=0.5 would be "
                                         "ignored"):
        runner.check_cells(bad, bad.cells("quick"), tmp_path)
    unknown = load_recipe(write_recipe(tmp_path, recipe(PRETRAIN, base={"dataset": "mnist"})))
    with pytest.raises(ValueError, match="dataset must be one of .*'mnist'"):
        runner.check_cells(unknown, unknown.cells("quick"), tmp_path)


def test_the_dry_run_of_a_simulation_needs_m_for_the_mini_batch_metrics(tmp_path):
    content = recipe(SIMULATE)
    del content["base"]["m"]
    simulation = load_recipe(write_recipe(tmp_path, content))
    with pytest.raises(ValueError, match="records no mini_neg_var, theory_mini_var_low"):
        runner.check_cells(simulation, simulation.cells("quick"), tmp_path)
    content["base"].update(m=2, loss="siglip")
    siglip = load_recipe(write_recipe(tmp_path, content))
    with pytest.raises(ValueError, match="loss siglip does not take temperature"):
        runner.check_cells(siglip, siglip.cells("quick"), tmp_path)


def test_progress_shows_cells_done_the_running_cell_and_an_eta():
    stream = io.StringIO()
    with SweepProgress(total=4, done=1, estimate_seconds=120, stream=stream) as shown:
        shown.started("batch_size=16 seed 0")
        shown.finished("batch_size=16 seed 0", 12.0)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "1 of 4 cells already finished: skipped"
    assert lines[1] == "[1/4] running batch_size=16 seed 0; ETA ~1 min 30 s"  # 3/4 of 120 s
    assert re.fullmatch(r"\[2/4\] finished batch_size=16 seed 0 in 12 s; ETA \d+ s", lines[2])


def test_progress_can_be_silenced():
    stream = io.StringIO()
    with SweepProgress(total=2, done=0, estimate_seconds=1, enabled=False, stream=stream) as s:
        s.started("a")
        s.finished("a", 1.0)
    assert stream.getvalue() == ""


#: Fake data in each dataset's real on-disk format, 8 to 15 training images: one optimizer
#: step at the smoke run's batch size.


def _tiny_cifar(fixed: str) -> dict:
    """The tiny recipe, whose paper tier is CIFAR-10 with a ResNet-18, holding ``fixed``."""
    content = recipe(PRETRAIN)
    if fixed == "steps":
        content["tiers"]["paper"]["set"].pop("epochs")
        content["tiers"]["paper"].update(fixed="steps", steps=39000)
    return content


@pytest.mark.slow
@pytest.mark.parametrize("name", [*recipe_names(), "tiny-cifar fixed epochs",
                                  "tiny-cifar fixed steps"])
def test_one_step_of_every_paper_tier_cell_runs_on_fake_data(name, tmp_path, monkeypatch):
    if name in recipe_names():
        chosen = load_recipe(name)
    else:
        chosen = load_recipe(write_recipe(tmp_path, _tiny_cifar(name.split()[-1])))
    if "paper" not in chosen.tiers:
        pytest.skip(f"{name} has no paper tier")
    data = tmp_path / "data"
    for dataset in datasets_of(chosen, "paper") & set(FAKE_DATA):
        FAKE_DATA[dataset](data)
        assert train_size(dataset, str(data)) // runner.SMOKE_BATCH == 1
    if "captioned_shapes" in datasets_of(chosen, "paper"):
        use_small_captioned_shapes(monkeypatch)
        assert train_size("captioned_shapes", str(data)) // runner.SMOKE_BATCH == 1
    out = tmp_path / "out"
    done = runner.smoke_recipe(chosen, "paper", out, data_dir=str(data))
    cells = runner.smoke_cells(chosen, "paper", str(data))
    assert sorted(done) == sorted(cell.cell_id for cell in cells)
    for cell in cells:
        for _, metrics in cell_points(done[cell.cell_id]):
            assert metrics and all(math.isfinite(value) for value in metrics.values()), (
                cell.cell_id)
        if cell.kind == "pretrain":
            assert len((cell.folder(out) / "metrics.jsonl").read_text().splitlines()) == 1
            assert not runner.is_finished(cell, out)  # a smoke run is never a finished cell
            assert not list(cell.folder(out).glob("*.pt")), "a smoke run keeps no checkpoint"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_on_a_terminal_is_a_bar_with_the_running_cell_and_eta():
    stream = Terminal()
    with SweepProgress(total=2, done=0, estimate_seconds=60, stream=stream) as shown:
        shown.started("batch_size=16 seed 0")
        assert "running batch_size=16 seed 0" in shown._bar.tasks[0].description
        shown.finished("batch_size=16 seed 0", 3.0)
    assert shown._bar.tasks[0].completed == 1 and "ETA" in shown._bar.tasks[0].fields["eta"]
    assert "1/2" in stream.getvalue()


def test_a_pretrain_cell_records_its_training_time_and_largest_epoch_peak_memory():
    epoch = {"loss": 1.0, "neg_sim_var": 0.1, "neg_sim_mean": 0.0, "pos_sim_mean": 0.9}
    history = [{**epoch, "epoch_seconds": 2.0, "peak_memory_mib": 150.0},
               {**epoch, "epoch_seconds": 3.5, "peak_memory_mib": 120.0}]
    metrics = runner._train_metrics(history)
    assert metrics["train_seconds"] == 5.5 and metrics["train_peak_memory_mib"] == 150.0
    without_peak = [{k: v for k, v in m.items() if k != "peak_memory_mib"} for m in history]
    assert "train_peak_memory_mib" not in runner._train_metrics(without_peak)


def test_a_changed_recipe_never_reuses_a_cell_run_with_other_settings(tmp_path):
    """The same --out after the recipe's temperature changed: no row may carry the new
    temperature on the old runs; the error names the setting, old and new."""
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"]["seeds"] = 1
    first = load_recipe(write_recipe(tmp_path, content))
    run_recipe(first, "quick", tmp_path / "out", progress=False)
    content["base"]["temperature"] = 0.5
    changed = load_recipe(write_recipe(tmp_path, content))
    with pytest.raises(ValueError, match=r"was run with other settings \(settings\.temperature: "
                                         r"0\.2 -> 0\.5\)"):
        run_recipe(changed, "quick", tmp_path / "out", progress=False)


def test_another_tier_in_the_same_folder_is_refused(tmp_path):
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    for tier in ("quick", "cpu"):
        content["tiers"][tier].update(seeds=1, set={"epochs": 1})
    chosen = load_recipe(write_recipe(tmp_path, content))
    run_recipe(chosen, "quick", tmp_path / "out", progress=False)
    with pytest.raises(ValueError, match=r"tier: 'quick' -> 'cpu'"):
        run_recipe(chosen, "cpu", tmp_path / "out", progress=False)


def test_a_changed_default_changes_the_identity_but_where_it_runs_does_not(tiny, tmp_path,
                                                                           monkeypatch):
    cell = tiny.cells("quick")[0]
    moved = dataclasses.replace(cell, settings={**cell.settings, "data_dir": "elsewhere",
                                                "num_workers": 2})
    assert moved.identity() == cell.identity()
    assert cell.identity()["settings"]["weight_decay"] == PretrainConfig().weight_decay
    defaults = {**recipe_checks.pretrain_defaults(), "weight_decay": 0.5}
    monkeypatch.setattr(recipe_checks, "pretrain_settings",
                        lambda settings: {**defaults, **settings})
    assert cell.identity()["settings"]["weight_decay"] == 0.5


def test_a_moved_sweep_folder_continues(tmp_path, monkeypatch):
    """An interrupted cell resumes from its checkpoint after the sweep folder was moved: where
    a run lives is not part of what it computes."""
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 2})
    chosen = load_recipe(write_recipe(tmp_path, content))
    cell = chosen.cells("quick")[0]

    def kill_after_first_epoch(completed, metrics):
        raise Killed

    spy_pretrain(monkeypatch, callback=kill_after_first_epoch)
    with pytest.raises(Killed):
        runner.run_cell(cell, tmp_path / "before")
    (tmp_path / "before").rename(tmp_path / "after")
    calls = spy_pretrain(monkeypatch)
    rows = run_recipe(chosen, "quick", tmp_path / "after", progress=False)
    assert calls == [(cell.folder(tmp_path / "after"), "last")] and rows


def test_a_folder_without_a_record_of_its_settings_is_refused(tiny, tmp_path):
    cell = tiny.cells("quick")[0]
    cell.folder(tmp_path).mkdir(parents=True)
    (cell.folder(tmp_path) / "result.json").write_text("{}")
    with pytest.raises(ValueError, match="holds a run with no record of its settings"):
        run_recipe(tiny, "quick", tmp_path, progress=False)


def test_a_setting_added_after_a_cell_ran_counts_as_its_default(tiny, tmp_path):
    """A finished cell whose cell.json predates a setting (its record lacks the key) is the
    same cell when the setting is at its default, as a resumed run reads its saved config."""
    cell = tiny.cells("quick")[0]
    folder = cell.folder(tmp_path)
    folder.mkdir(parents=True)
    identity = cell.identity()
    old = {**identity, "settings": {key: value for key, value in identity["settings"].items()
                                    if key != "polarization_reduction"}}
    (folder / "cell.json").write_text(json.dumps(old))
    runner.check_identity(cell, tmp_path)  # unset is its default, "mean"
    changed = dataclasses.replace(cell, settings={**cell.settings,
                                                  "polarization_reduction": "sum"})
    with pytest.raises(ValueError, match=r"settings\.polarization_reduction: 'mean' -> 'sum'"):
        runner.check_identity(changed, tmp_path)
