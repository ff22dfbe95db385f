"""The hardneg cell kind and the hard-negative paper's recipes (Jiang, Nguyen, Aeron, Ishwar,
arXiv:2311.05139): metric names, settings errors, the dry run of every tier, the bounds of
Theorems 2 and 3 at neural collapse, one tiny run writing its files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from contrastkit import theory
from contrastkit.experiments import load_recipe, reproduce
from contrastkit.experiments.convergence import HARDNEG_CURVES, UNFITTED
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.kinds import hardneg as kind
from contrastkit.experiments.recipe import Cell
from contrastkit.train import hard_negative_runs as runs

RECIPES = ("hardneg/fig2", "hardneg/beta", "hardneg/bounds")


def cell(**settings) -> Cell:
    return Cell("hardneg/test", "quick", "test", {}, 0, settings, {}, "hardneg")


def test_the_kind_lists_exactly_the_metrics_a_run_reports():
    from contrastkit.experiments.convergence import HARDNEG_INPUTS

    assert kind.METRICS == (*runs.CURVE_METRICS, *runs.FINAL_METRICS, "init_nc_gap",
                            "converged", *HARDNEG_INPUTS)
    assert CELL_KINDS.get("hardneg").metrics == kind.METRICS


@pytest.mark.parametrize("name", RECIPES)
@pytest.mark.parametrize("tier", ("quick", "cpu", "paper"))
def test_every_cell_of_every_tier_builds(name, tier, tmp_path):
    result = reproduce(name, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and result.cells and not list(tmp_path.iterdir())


def test_the_paper_tiers_run_the_papers_data_and_resnet50():
    datasets = {cell.settings["dataset"] for cell in load_recipe("hardneg/beta").cells("paper")}
    assert datasets == {"cifar10", "cifar100", "imagefolder"}
    for name in RECIPES:
        cells = load_recipe(name).cells("paper")
        assert {c.settings["backbone"] for c in cells} == {"resnet50"}, name


@pytest.mark.parametrize("settings, match", [
    ({"loss": "supcon"}, "family"), ({"positives": "views"}, "positives"),
    ({"beta": -1.0}, "beta"), ({"dataset": "nope"}, "dataset"),
    ({"dataset": "digits"}, "images need a CNN"), ({"backbone": "resnet50", "dim": 10}, "3072"),
])
def test_a_bad_setting_names_the_cell_and_the_setting(settings, match):
    with pytest.raises(ValueError, match=match) as error:
        kind.hardneg_cell(cell(**settings), None, 0)
    assert "cell test of hardneg/test" in str(error.value)


def test_at_neural_collapse_the_losses_equal_the_bounds_of_theorems_2_and_3():
    classes, per_class, k = 3, 40, 256
    means = torch.from_numpy(theory.simplex_etf(classes, classes - 1))
    labels = torch.arange(classes * per_class) % classes
    setup = runs.HardNegativeSetup(k=k, batch_size=512)
    losses = runs.representation_losses(means[labels], labels, setup, seed=0)
    # SCL: every negative is -1/(C-1) away, so every draw gives the bound exactly
    assert losses["loss_scl"] == pytest.approx(theory.scl_lower_bound(classes, k), abs=1e-12)
    # UCL: the draws of same-class negatives are Binomial(k, 1/C): the bound up to sampling
    assert losses["loss_ucl"] == pytest.approx(theory.ucl_lower_bound(classes, k), abs=2e-3)


def test_a_tiny_synthetic_run_records_its_metrics_and_writes_its_files(tmp_path):
    settings = dict(n_per_class=6, dim=12, k=8, epochs=3, record_every=1, hidden=16)
    metrics = kind.hardneg_cell(cell(**settings), tmp_path, None)
    # init_nc_gap is recorded only by a recipe about the initialization (one that sets init);
    # 3 epochs are too few to fit a line through their half: no curve's drift, all 9 counted
    assert set(metrics) == {name for name in kind.METRICS
                            if name != "init_nc_gap" and not name.startswith("drift_")}
    assert all(math.isfinite(value) for value in metrics.values())
    assert metrics["converged"] == 0.0 and metrics[UNFITTED] == len(HARDNEG_CURVES)
    curves = json.loads((tmp_path / kind.CURVES).read_text())
    assert [point["epoch"] for point in curves] == [1, 2, 3]
    arrays = np.load(tmp_path / kind.REPRESENTATION)
    assert arrays["z"].shape == (18, 2) and (np.linalg.norm(arrays["z"], axis=1) <= 1 + 1e-12).all()
    assert metrics["theory_scl_bound"] == theory.scl_lower_bound(3, 8)


def test_the_data_folder_reaches_the_cells_of_a_kind_that_reads_data(tmp_path):
    cells = load_recipe("hardneg/beta").cells("paper", data_dir=str(tmp_path))
    assert {c.settings["data_dir"] for c in cells} == {str(tmp_path)}
    simulated = load_recipe("similarities/fig2").cells("quick", data_dir=str(tmp_path))
    assert all("data_dir" not in c.settings for c in simulated)


def test_a_run_is_judged_by_its_epochs_losses_and_its_nc_curves():
    """The cell's verdict (experiments.convergence) reads each epoch's mean loss and the
    recorded neural-collapse curves, the NC gap among them: a gap still closing fails a run
    whose loss has settled."""
    from contrastkit.experiments.convergence import CONVERGENCE_RULE_VERSION, RULE, judge_metrics
    from contrastkit.train.hard_negative_runs import CURVE_METRICS, HardNegativeResult

    losses = [2.0 + math.exp(-epoch / 3) for epoch in range(1, 101)]

    def point(epoch, gap):
        return {"epoch": epoch, **dict.fromkeys(CURVE_METRICS, 0.01),
                "within_class_distance": gap}

    settled = HardNegativeResult(curves=[point(e, 0.01 + 0.3 * math.exp(-e / 5))
                                         for e in range(10, 101, 10)], epoch_losses=losses)
    closing = HardNegativeResult(curves=[point(e, 1.0 - 0.009 * e) for e in range(10, 101, 10)],
                                 epoch_losses=losses)
    verdict = kind.judged(settled)
    assert verdict["converged"] == 1.0 and verdict[RULE] == CONVERGENCE_RULE_VERSION
    assert {name for name in verdict if name.startswith("drift_")} == {
        f"drift_{curve}" for curve in HARDNEG_CURVES}  # the m = 9 curves of the correction
    assert judge_metrics(verdict) == 1.0
    verdict = kind.judged(closing)
    assert verdict["converged"] == 0.0 and abs(verdict["drift_nc_gap"]) > 1.0
    assert judge_metrics(verdict) == 0.0


def curve_epochs(epochs: int, record_every: int) -> list[int]:
    """The epochs at which a run records its neural-collapse curves (every ``record_every``
    epochs and the last: train_hard_negative)."""
    return [epoch for epoch in range(1, epochs + 1)
            if epoch % record_every == 0 or epoch == epochs]


@pytest.mark.parametrize("name", ["hardneg/beta", "hardneg/bound-ck", "hardneg/bounds",
                                  "hardneg/fig2", "hardneg/fig4"])
def test_every_tier_but_the_smoke_test_records_enough_curve_points_to_converge(name):
    """The convergence rule fits a line to at least MIN_POINTS points of each curve's second
    half: a tier that records its NC curves more sparsely can never converge (hardneg/fig4's
    cpu tier, 30 epochs recorded every 10, had two)."""
    from contrastkit.experiments.convergence import MIN_POINTS, half_way

    chosen = load_recipe(name)
    for tier in chosen.tiers:
        if tier == "quick":
            continue
        for cell in chosen.cells(tier):
            epochs, every = cell.settings["epochs"], cell.settings["record_every"]
            late = [epoch for epoch in curve_epochs(epochs, every) if epoch >= half_way(epochs)]
            assert len(late) >= MIN_POINTS, (tier, cell.cell_id, epochs, every)
