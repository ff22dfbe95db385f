"""``contrastkit reproduce --all``: every shipped recipe's tier as one resumable sweep, with
one progress line over recipes and cells, each report written as its recipe finishes; and the
datasets a sweep loads once."""

from __future__ import annotations

import io
import json
import re

import pytest

from contrastkit.cli import main
from contrastkit.data import cached_datasets, load_dataset
from contrastkit.experiments import recipe, reproduce_all, runner
from contrastkit.experiments.progress import SweepProgress
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """Two shipped recipes with a quick tier (a simulation and a one-cell pretrain) and one
    without a cpu tier."""
    folder = tmp_path / "recipes"
    pretrain = content_of(PRETRAIN, grid={"batch_size": [128]}, claims=[])
    pretrain["tiers"]["quick"]["seeds"] = 1
    write_recipe(folder / "papers", pretrain, "table9")
    write_recipe(folder / "papers", SIMULATE, "fig9")
    monkeypatch.setattr(recipe, "RECIPES", folder)
    return folder


def test_all_runs_every_recipe_of_the_tier_and_writes_each_report(shipped, tmp_path):
    done = reproduce_all("quick", out=tmp_path / "out", progress=False)
    assert [reproduction.out for reproduction in done] == [
        tmp_path / "out" / "papers-fig9" / "quick", tmp_path / "out" / "papers-table9" / "quick"]
    for reproduction, name in zip(done, ["papers/fig9", "papers/table9"], strict=True):
        assert (reproduction.out / "report.md").is_file()
        assert (reproduction.out / "results.csv").is_file() and reproduction.rows
        record = json.loads((reproduction.out / "run.json").read_text())
        assert (record["recipe"], record["tier"], record["runs"]) == (name, "quick", 1)
        assert record["command"].startswith(f"contrastkit reproduce {name} --tier quick")


def test_all_resumes_and_repeats_nothing_finished(shipped, tmp_path, monkeypatch):
    reproduce_all("quick", out=tmp_path / "out", progress=False)
    ran = []
    monkeypatch.setattr(runner, "run_cell", lambda cell, out: ran.append(cell) or {})
    again = reproduce_all("quick", out=tmp_path / "out", progress=False)
    assert ran == [] and all((done.out / "report.md").is_file() for done in again)


def test_all_keeps_only_the_recipes_that_have_the_tier(shipped, tmp_path):
    done = reproduce_all("cpu", out=tmp_path / "out", dry_run=True)
    assert [reproduction.out.parent.name for reproduction in done] == ["papers-table9"]
    with pytest.raises(ValueError, match="no shipped recipe has a tier 'nope'"):
        reproduce_all("nope")


def test_the_command_runs_all_with_one_progress_line_over_recipes_and_cells(shipped, tmp_path,
                                                                           capsys):
    code = main(["reproduce", "--all", "--tier", "quick", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert re.search(r"\[recipes 1/2, cells 2/2\] finished papers/table9 ", captured.err)
    assert f"report: {tmp_path / 'out' / 'papers-table9' / 'quick' / 'report.md'}" in (
        captured.out)


def test_all_and_a_recipe_together_are_refused(shipped, capsys):
    assert main(["reproduce", "papers/fig9", "--all"]) == 2
    assert "--all runs every recipe; drop RECIPE" in capsys.readouterr().err


def test_progress_over_several_recipes_counts_them():
    stream = io.StringIO()
    with SweepProgress(total=3, done=0, estimate_seconds=30, stream=stream, recipes=2) as shown:
        shown.started("a seed 0")
        shown.finished("a seed 0", 1.0)
        shown.recipe_finished()
        shown.started("b seed 0")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[recipes 0/2, cells 0/3] running a seed 0")
    assert lines[1].startswith("[recipes 0/2, cells 1/3] finished a seed 0 in 1 s")
    assert lines[2].startswith("[recipes 1/2, cells 1/3] running b seed 0")


def test_inside_a_sweep_each_dataset_is_loaded_once():
    outside = load_dataset("digits", "test")
    assert load_dataset("digits", "test") is not outside
    with cached_datasets():
        first = load_dataset("digits", "test")
        with cached_datasets():
            assert load_dataset("digits", "test") is first
        assert load_dataset("digits", "test") is first
        assert load_dataset("digits", "train") is not first
    assert load_dataset("digits", "test") is not first
