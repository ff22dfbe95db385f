"""The recipes of LMCL (Chen, Niu, Gong, Li, Yang, Sugiyama, ICML 2021): shipped, their claims
testable in every tier, the time budgets, the paper tiers on the paper's data, the toy cell
kind (same seed, same data for every method; its points file feeds the scatter figure), and
the two readings of Eq. 10's reduction (lmcl/reduction, lmcl/fig4: a claim per reading, the
setting reaching each run)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from contrastkit.experiments import load_recipe, recipe_names
from contrastkit.experiments.figures import FigureData, draw_figures
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.results import cell_axes, summarize
from contrastkit.experiments.runner import read_result, run_recipe

NAMES = [f"lmcl/{name}" for name in ("fig2", "fig3", "fig4", "reduction", "table1", "table2",
                                     "table3", "thm1")]
TIERS = ("quick", "cpu", "paper")
READINGS = ["mean", "sum"]


def test_the_eight_lmcl_recipes_are_shipped():
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
    assert max(quick) <= 1 and sum(quick) <= 6 and max(cpu) <= 60
    assert load_recipe("lmcl/fig4").tiers["cpu"].estimate_minutes <= 30
    assert load_recipe("lmcl/table1").tiers["cpu"].seeds == 20  # the paper's 20 trials


@pytest.mark.parametrize("name, dataset, backbone", [
    ("lmcl/fig2", "cifar10", "resnet18"),
    ("lmcl/table2", "cifar10", "resnet50"),
    ("lmcl/table3", "stl10", "resnet50"),
    ("lmcl/reduction", "cifar10", "resnet50"),
    ("lmcl/fig4", "cifar10", "resnet50"),
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


# --- the two readings of Eq. 10: the regularizer averaged or summed over the batch's pairs ---

@pytest.mark.parametrize("name", ["lmcl/reduction", "lmcl/fig4"])
def test_each_claim_is_tested_under_each_reading(name):
    """Every tier crosses the reduction with the baseline and DP at the paper's lambda; each
    claim holds one reading fixed, and every claim is made under both."""
    recipe = load_recipe(name)
    for tier in TIERS:
        axes = recipe.axes(tier)
        assert axes["polarization_reduction"] == READINGS and axes["polarization"] == [0.0, 0.1]
    readings = {}
    for claim in recipe.claims:
        assert (claim.treatment, claim.control) == ({"polarization": 0.1}, {"polarization": 0.0})
        readings.setdefault(claim.id.rsplit("_", 1)[0], []).append(
            claim.where["polarization_reduction"])
    assert all(found == READINGS for found in readings.values()), readings


@pytest.mark.parametrize("name", ["lmcl/reduction", "lmcl/fig4"])
def test_the_cpu_tiers_are_the_other_image_recipes_digits_runs(name):
    """The digits for 100 epochs with a 5 % warm-up, 3 seeds, Adam at temperature 0.5 and the
    paper's band: lmcl/table2's cpu tier, so that the verdicts compare."""
    recipe = load_recipe(name)
    assert recipe.tiers["cpu"].seeds == 3
    for cell in recipe.cells("cpu", seeds=1):
        settings = cell.settings
        assert (settings["dataset"], settings["epochs"], settings["warmup_share"]) == (
            "digits", 100, 0.05)
        assert (settings["temperature"], settings["optimizer"], settings["vrns"]) == (
            0.5, "adamw", 0.0)
        assert settings.get("delta_plus", 0.1) == 0.1 and settings.get("delta_minus", 0.5) == 0.5
    if name == "lmcl/reduction":
        assert {cell.settings["batch_size"] for cell in recipe.cells("cpu")} == {128}


def test_fig4_spans_the_papers_negative_sizes():
    """The paper's 32 to 512 negatives: all five in the paper tier, the two ends in the cpu
    tier; the same epochs at every batch size, as the paper holds them."""
    recipe = load_recipe("lmcl/fig4")
    assert recipe.axes("paper")["batch_size"] == [32, 64, 128, 256, 512]
    assert recipe.axes("cpu")["batch_size"] == [32, 512]
    assert recipe.fixed_for("cpu") == "epochs"
    assert {cell.settings["epochs"] for cell in recipe.cells("paper")} == {100}


def _by_cell(rows, metric):
    return {(row["cell"], row["seed"]): row["value"] for row in rows if row["metric"] == metric}


@pytest.mark.slow
def test_the_reduction_reaches_each_run_and_the_baseline_is_one_run(tmp_path):
    """lmcl/reduction's quick tier, one seed: each run's config records its reduction; the
    baseline is one run under both labels (the reduction does nothing without the
    regularizer: the sweep trains it once); the summed regularizer moves the distances the
    mean leaves in place; the distance histograms are drawn."""
    recipe = load_recipe("lmcl/reduction")
    rows = run_recipe(recipe, "quick", tmp_path, seeds=1, progress=False)
    for cell in recipe.cells("quick", seeds=1):
        source = read_result(cell, tmp_path).get("same_run_as", cell.cell_id)
        shared = source != cell.cell_id
        assert shared == (cell.axes == {"polarization": 0.0, "polarization_reduction": "sum"})
        trained = tmp_path / "cells" / source / f"seed-{cell.seed}" / "config.yaml"
        saved = yaml.safe_load(trained.read_text())
        assert saved["polarization"] == cell.axes["polarization"]
        assert saved["polarization_reduction"] == (
            "mean" if shared else cell.axes["polarization_reduction"])
    margin = _by_cell(rows, "margin_fraction")
    for metric in ("linear_top1", "knn_top1", "margin_fraction", "train_loss"):
        values = _by_cell(rows, metric)
        assert (values[("polarization=0.0,polarization_reduction=mean", 0)]
                == values[("polarization=0.0,polarization_reduction=sum", 0)]), metric
    assert (margin[("polarization=0.1,polarization_reduction=sum", 0)]
            != margin[("polarization=0.1,polarization_reduction=mean", 0)])
    written = draw_figures(["distance_histograms"], FigureData(
        summarize(rows), cell_axes(rows), [], rows, tmp_path))
    assert [path.name for path in written] == ["distance_histograms.png"]


@pytest.mark.slow
def test_fig4_runs_every_batch_size_and_draws_the_gains(tmp_path):
    """lmcl/fig4's quick tier, one seed: the same epochs at every batch size, every cell's
    accuracy, and the gain figure (one column per reading)."""
    recipe = load_recipe("lmcl/fig4")
    rows = run_recipe(recipe, "quick", tmp_path, seeds=1, progress=False)
    cells = recipe.cells("quick", seeds=1)
    assert len(_by_cell(rows, "linear_top1")) == len(cells) == 8
    for cell in cells:
        saved = (cell.folder(tmp_path) / "config.yaml").read_text()
        assert f"batch_size: {cell.axes['batch_size']}\n" in saved and "\nepochs: 1\n" in saved
    written = draw_figures(["gain_bars"], FigureData(summarize(rows), cell_axes(rows), [], rows,
                                                     tmp_path))
    assert [path.name for path in written] == ["gain_bars.png"]
