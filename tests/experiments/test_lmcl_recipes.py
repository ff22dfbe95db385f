"""The recipes of LMCL (Chen, Niu, Gong, Li, Yang, Sugiyama, ICML 2021): shipped, their claims
testable in every tier, the time budgets, the paper tiers on the paper's data, and the toy
cell kind (same seed, same data for every method; its points file feeds the scatter figure)."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit.experiments import load_recipe, recipe_names
from contrastkit.experiments.figures import FigureData, draw_figures
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.results import cell_axes, summarize
from contrastkit.experiments.runner import run_recipe

NAMES = [f"lmcl/{name}" for name in ("fig2", "fig3", "table1", "table2", "table3")]
TIERS = ("quick", "cpu", "paper")


def test_the_five_lmcl_recipes_are_shipped():
    assert [name for name in recipe_names() if name.startswith("lmcl/")] == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_claims_can_be_tested_in_every_tier(name):
    recipe = load_recipe(name)
    assert "Large-Margin Contrastive Learning" in recipe.reproduces and recipe.claims
    for tier in TIERS:
        assert recipe.tiers[tier].seeds >= 2, (name, tier)
        axes = recipe.axes(tier)
        for claim in recipe.claims:
            for compared in (claim.along, claim.across, claim.for_each):
                if compared is not None:
                    assert len(axes[compared]) >= 2, (name, tier, claim.id, compared)


def test_time_budgets_and_the_papers_trials():
    recipes = [load_recipe(name) for name in NAMES]
    quick = [recipe.tiers["quick"].estimate_minutes for recipe in recipes]
    cpu = [recipe.tiers["cpu"].estimate_minutes for recipe in recipes]
    assert max(quick) <= 1 and sum(quick) <= 4 and max(cpu) <= 60
    assert load_recipe("lmcl/table1").tiers["cpu"].seeds == 20  # the paper's 20 trials


@pytest.mark.parametrize("name, dataset, backbone", [
    ("lmcl/fig2", "cifar10", "resnet18"),
    ("lmcl/table2", "cifar10", "resnet50"),
    ("lmcl/table3", "stl10", "resnet50"),
])
def test_paper_tiers_run_the_papers_data(name, dataset, backbone):
    cells = load_recipe(name).cells("paper")
    assert {cell.settings["dataset"] for cell in cells} == {dataset}
    assert {cell.settings["backbone"] for cell in cells} == {backbone}


def test_table3_keeps_delta_minus_at_one_half_and_the_papers_grid():
    recipe = load_recipe("lmcl/table3")
    cells = recipe.cells("paper")
    assert {cell.settings["delta_minus"] for cell in cells} == {0.5}
    taus = sorted({round(0.5 - cell.settings["delta_plus"], 10) for cell in cells})
    assert taus == [0.1, 0.2, 0.25, 0.3, 0.4]
    assert sorted({cell.settings["polarization"] for cell in cells}) == [0.01, 0.1, 0.5, 5.0]
    assert len(recipe.paper) == 20


def test_every_method_of_a_toy_trial_sees_the_same_data(tmp_path):
    recipe = load_recipe("lmcl/table1")
    cells = [cell for cell in recipe.cells("quick") if cell.seed == 1
             and cell.axes["dataset"] == "nested_moons"]
    toy = CELL_KINDS.get("lmcl_toy")
    for cell in cells:
        toy.run(cell, tmp_path / cell.cell_id, 3)
    saved = [np.load(tmp_path / cell.cell_id / "points.npz") for cell in cells]
    assert all(np.array_equal(s["points"], saved[0]["points"]) for s in saved)
    assert np.array_equal(saved[0]["embedded"], saved[0]["points"])  # euclidean: raw points
    assert all(np.allclose(np.linalg.norm(s["embedded"], axis=1), 1) for s in saved[1:])


def test_a_bad_toy_setting_names_the_cell_and_the_setting(tmp_path):
    recipe = load_recipe("lmcl/table1")
    cell = recipe.cells("quick")[0]
    bad = type(cell)(**{**cell.as_dict(), "settings": {**cell.settings, "length": 2.0,
                                                       "dataset": "nested_moons"}})
    with pytest.raises(ValueError, match="dataset nested_moons does not take length$"):
        CELL_KINDS.get("lmcl_toy").run(bad, None, 0)
    bad = type(cell)(**{**cell.as_dict(), "settings": {**cell.settings, "method": "pca"}})
    with pytest.raises(ValueError, match="method must be one of euclidean, cl, lmcl"):
        CELL_KINDS.get("lmcl_toy").run(bad, None, 0)


@pytest.mark.slow
def test_the_toy_scatter_draws_one_panel_per_set_and_method(tmp_path):
    recipe = load_recipe("lmcl/fig3")
    rows = run_recipe(recipe, "quick", tmp_path, seeds=1, progress=False)
    summary = summarize(rows)
    written = draw_figures(["toy_scatter"], FigureData(summary, cell_axes(rows), [], rows,
                                                       tmp_path))
    assert [path.name for path in written] == ["toy_scatter.png"]
