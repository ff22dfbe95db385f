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
                "test": "increasing", "along": "steps"}],
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
