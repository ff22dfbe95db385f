"""A new kind of cell is one registered :class:`CellKind`: recipes of that kind are checked
against its settings and metrics, run (writing into the cell's folder), dry-run (steps 0, no
folder) and smoke-tested (steps 1) without any change to the runner."""

from __future__ import annotations

import json

import pytest

from contrastkit.experiments import load_recipe, run_recipe
from contrastkit.experiments.kinds import CELL_KINDS, CellKind
from contrastkit.experiments.runner import check_cells, smoke_recipe
from contrastkit.registry import Registry

from .tiny_recipes import recipe, write_recipe

CALLS: list[tuple] = []


def _count_up(cell, folder, steps):
    """A toy kind: ``value`` is the cell's ``start`` plus its steps and seed; the run leaves
    a file in its folder."""
    CALLS.append((cell.cell_id, cell.seed, folder, steps))
    steps = cell.settings.get("steps", 3) if steps is None else steps
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "trace.json").write_text(json.dumps({"steps": steps}))
    return {"value": cell.settings["start"] + steps + cell.seed}


COUNT_UP = CellKind(run=_count_up, settings=lambda: ("start", "steps"), metrics=("value",),
                    data="integers (a test kind)", default_steps=lambda: 3)

TOY = {
    "title": "A toy kind", "reproduces": "nothing: a test recipe", "kind": "count_up",
    "base": {"start": 10}, "grid": {"steps": [1, 5]}, "metrics": ["value"],
    "claims": [{"id": "more", "text": "more steps count higher", "metric": "value",
                "test": "increasing", "along": "steps", "trend": "end_to_end"}],
    "tiers": {"quick": {"seeds": 2, "estimate_minutes": 0.1}},
}


@pytest.fixture(autouse=True)
def count_up(monkeypatch):
    """``count_up`` registered in a copy of the kinds, so that it does not leak into other
    tests."""
    monkeypatch.setattr(CELL_KINDS, "_entries", dict(CELL_KINDS._loaded()))
    CELL_KINDS.register("count_up", COUNT_UP)
    CALLS.clear()


def test_a_registered_kind_runs_with_its_own_settings_and_files(tmp_path):
    toy = load_recipe(write_recipe(tmp_path, TOY))
    rows = run_recipe(toy, "quick", tmp_path / "out", progress=False)
    values = {(row["cell"], row["seed"]): row["value"] for row in rows}
    assert values == {("steps=1", 0): 11, ("steps=1", 1): 12, ("steps=5", 0): 15,
                      ("steps=5", 1): 16}
    cells = toy.cells("quick")
    assert [cell.steps for cell in cells] == [1, 1, 5, 5]
    for cell in cells:
        assert json.loads((cell.folder(tmp_path / "out") / "trace.json").read_text()) == {
            "steps": cell.settings["steps"]}


def test_the_dry_run_builds_with_steps_0_and_no_folder_and_the_smoke_run_with_1(tmp_path):
    toy = load_recipe(write_recipe(tmp_path, TOY))
    check_cells(toy, toy.cells("quick"), tmp_path / "dry")
    assert {(folder, steps) for *_, folder, steps in CALLS} == {(None, 0)}
    assert not (tmp_path / "dry").exists()
    CALLS.clear()
    smoke_recipe(toy, "quick", tmp_path / "smoke")
    assert {(folder, steps) for *_, folder, steps in CALLS} == {(None, 1)}


def test_a_recipe_of_the_kind_is_checked_against_its_settings_and_metrics(tmp_path):
    with pytest.raises(ValueError, match="'lr' in base is not a count_up setting; valid keys: "
                                         "start, steps"):
        load_recipe(write_recipe(tmp_path, recipe(TOY, base={"start": 1, "lr": 0.1})))
    with pytest.raises(ValueError, match="a count_up cell records value"):
        load_recipe(write_recipe(tmp_path, recipe(TOY, metrics=["accuracy"])))
    with pytest.raises(ValueError, match="fixed applies to kind: pretrain only"):
        load_recipe(write_recipe(tmp_path, recipe(TOY, fixed="epochs")))
    with pytest.raises(ValueError, match="kind must be one of pretrain, .*count_up"):
        load_recipe(write_recipe(tmp_path, recipe(TOY, kind="count_down")))


def test_the_dry_run_names_a_metric_the_kind_does_not_return(tmp_path):
    CELL_KINDS.register("count_up_no_value", CellKind(
        run=lambda cell, folder, steps: {}, settings=COUNT_UP.settings,
        metrics=COUNT_UP.metrics, data="nothing"))
    toy = load_recipe(write_recipe(tmp_path, recipe(TOY, kind="count_up_no_value")))
    with pytest.raises(ValueError, match="records no value with its settings"):
        check_cells(toy, toy.cells("quick"), tmp_path)


def test_a_registry_loads_its_built_in_entries_once_on_first_read():
    loads = []
    registry = Registry("thing", load=lambda: loads.append(registry.register("built_in", 1)))
    registry.register("early", 2)
    assert loads == []
    assert "built_in" in registry and registry.names() == ("built_in", "early")
    assert list(registry) == ["built_in", "early"] and len(registry) == 2
    assert loads == [1]


def test_the_built_in_kinds_and_figures_are_found_in_their_packages():
    from contrastkit.experiments.figures import FIGURES

    assert "simulate" in CELL_KINDS.names()
    assert {"variance_vs_batch", "accuracy_vs_temperature", "gain_bars"} <= set(FIGURES)


def _sweep(cell, folder, steps):
    """A toy kind whose cell records ``count`` points, one per ``k``: ``value = start + k +
    seed``."""
    return [{"axes": {"k": k, "odd": "yes" if k % 2 else "no"},
             "metrics": {"value": cell.settings["start"] + k + cell.seed}}
            for k in range(cell.settings["count"])]


SWEEP = CellKind(run=_sweep, settings=lambda: ("start", "count"), metrics=("value",),
                 data="integers (a test kind)", point_axes=("k", "odd"))
SWEEP_RECIPE = {
    **TOY, "kind": "sweep", "base": {"count": 3}, "grid": {"start": [0, 10]},
    "claims": [{"id": "k_up", "text": "value grows with k", "metric": "value",
                "test": "at_least", "target": 10.0, "where": {"start": 10, "k": 0}},
               {"id": "odd", "text": "odd points", "metric": "value", "test": "at_most",
                "target": 2.0, "where": {"start": 0, "odd": "yes"}}],
}


def test_a_cell_may_record_several_points_each_a_cell_of_the_results(tmp_path):
    from contrastkit.experiments import evaluate_claims, summarize

    CELL_KINDS.register("sweep", SWEEP)
    sweep = load_recipe(write_recipe(tmp_path, SWEEP_RECIPE))
    rows = run_recipe(sweep, "quick", tmp_path / "out", progress=False)
    assert len(rows) == 2 * 3 * 2  # cells x points x seeds
    first = rows[0]
    assert (first["cell"], first["start"], first["k"], first["odd"]) == (
        "start=0,k=0,odd=no", 0, 0, "no")
    values = {(row["cell"], row["seed"]): row["value"] for row in rows}
    assert values[("start=10,k=2,odd=no", 1)] == 13
    summary = summarize(rows)
    odd = {0: "no", 1: "yes", 2: "no"}
    assert {entry["cell"] for entry in summary} == {f"start={s},k={k},odd={odd[k]}"
                                                    for s in (0, 10) for k in range(3)}
    assert all(entry["n"] == 2 for entry in summary)
    verdicts = {v.claim_id: v for v in evaluate_claims(sweep, rows)}
    assert verdicts["k_up"].verdict == "supported" and verdicts["k_up"].n == 2
    assert verdicts["odd"].verdict == "supported" and verdicts["odd"].effect == 0.0


def test_the_dry_run_checks_the_axes_of_each_point(tmp_path):
    CELL_KINDS.register("sweep", SWEEP)
    CELL_KINDS.register("sweep_missing_axis", CellKind(
        run=_sweep, settings=SWEEP.settings, metrics=SWEEP.metrics, data="integers",
        point_axes=("k",)))
    sweep = load_recipe(write_recipe(tmp_path, SWEEP_RECIPE))
    check_cells(sweep, sweep.cells("quick"), tmp_path)
    claims = [{"id": "k", "text": "k", "metric": "value", "test": "at_least", "target": 0.0,
               "where": {"k": 0}}]
    wrong = load_recipe(write_recipe(tmp_path, recipe(SWEEP_RECIPE, kind="sweep_missing_axis",
                                                      claims=claims)))
    with pytest.raises(ValueError, match="records a point with axes k, odd; its kind "
                                         "sweep_missing_axis declares k"):
        check_cells(wrong, wrong.cells("quick"), tmp_path)

