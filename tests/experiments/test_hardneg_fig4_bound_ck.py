"""The hard-negative recipes hardneg/fig4 (Fig. 4 rows 1-4 and Table 2: initialization and
feature normalization) and hardneg/bound-ck (Figs. 5 and 6: Theorem 3's UCL bound against C and
k), and the hardneg kind's settings they need: ``normalize``, ``psi``, ``init`` /
``init_epochs`` (the near-NC initialization) and the seeded initial weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contrastkit import theory
from contrastkit.experiments import load_recipe, reproduce
from contrastkit.experiments.figures import FIGURES, FigureData
from contrastkit.experiments.kinds import hardneg as kind
from contrastkit.experiments.recipe import Cell
from contrastkit.train import hard_negative_runs as runs
from tests.experiments.report_checks import check_well_formed

RECIPES = ("hardneg/fig4", "hardneg/bound-ck")
TINY = dict(n_per_class=6, dim=12, k=8, epochs=3, record_every=3, hidden=16)


def cell(seed: int = 0, **settings) -> Cell:
    return Cell("hardneg/test", "quick", "test", {}, seed, settings, {}, "hardneg")


@pytest.mark.parametrize("name", RECIPES)
@pytest.mark.parametrize("tier", ("quick", "cpu", "paper"))
def test_every_cell_of_every_tier_builds(name, tier, tmp_path):
    result = reproduce(name, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and result.cells and not list(tmp_path.iterdir())


def test_fig4_runs_the_papers_four_rows_in_every_tier():
    recipe = load_recipe("hardneg/fig4")
    rows = {("ball", "random"), ("ball", "near_nc"), ("sphere", "random"), ("none", "random")}
    for tier in ("quick", "cpu", "paper"):
        cells = recipe.cells(tier, seeds=1)
        assert rows <= {(c.settings["normalize"], c.settings["init"]) for c in cells}, tier
        assert {c.settings["loss"] for c in cells} == {"scl", "ucl"}
        assert {0, 10} <= {c.settings["beta"] for c in cells}
    paper = recipe.cells("paper", seeds=1)
    assert {c.settings["dataset"] for c in paper} == {"cifar100", "cifar10"}
    assert {c.settings["backbone"] for c in paper} == {"resnet50"}


def test_bound_ck_cells_are_one_balanced_batch_of_figs_5_and_6():
    """Every cell's C x n_per_class points fit one batch (negatives of the anchor's class
    with probability exactly 1/C); the cpu tier covers k = 1..5 and C from 2 to 20."""
    recipe = load_recipe("hardneg/bound-ck")
    for tier in ("quick", "cpu", "paper"):
        for c in recipe.cells(tier, seeds=1):
            s = c.settings
            assert s["num_classes"] * s["n_per_class"] <= s["batch_size"], (tier, c.cell_id)
            assert s["loss"] == "ucl" and s["beta"] == 0 and s["positives"] == "labels"
    cpu = recipe.cells("cpu", seeds=1)
    assert {c.settings["k"] for c in cpu} == {1, 2, 3, 4, 5}
    assert {c.settings["psi"] for c in cpu} == {"infonce_sum", "triplet"}
    classes = {c.settings["num_classes"] for c in cpu}
    assert min(classes) == 2 and max(classes) == 20


@pytest.mark.parametrize("settings, match", [
    ({"normalize": "cube"}, "normalize"), ({"psi": "hinge"}, "psi"),
    ({"init": "pretrained"}, "init"), ({"init_epochs": 0}, "init_epochs"),
])
def test_a_bad_new_setting_names_the_cell_and_the_setting(settings, match):
    with pytest.raises(ValueError, match=match) as error:
        kind.hardneg_cell(cell(**settings), None, 0)
    assert "cell test of hardneg/test" in str(error.value)


def test_the_same_cell_gives_the_same_run_whatever_ran_before():
    """The encoder's initial weights come from the cell's seed, not from the process's
    random state (cells share long-lived worker processes)."""
    first = kind.hardneg_cell(cell(**TINY), None, None)
    torch.randn(1000)  # another cell's draws in the same worker
    again = kind.hardneg_cell(cell(**TINY), None, None)
    assert first.keys() == again.keys()
    assert all(first[name] == again[name] or (math.isnan(first[name]) and
                                               math.isnan(again[name])) for name in first)


def test_the_normalization_reaches_training_and_the_recorded_representation(tmp_path):
    for mode in ("sphere", "none"):
        folder = tmp_path / mode
        metrics = kind.hardneg_cell(cell(normalize=mode, **TINY), folder, None)
        z = np.load(folder / kind.REPRESENTATION)["z"]
        norms = np.linalg.norm(z, axis=1)
        if mode == "sphere":
            assert np.allclose(norms, 1.0) and math.isfinite(metrics["nc_gap"])
        else:
            assert not np.allclose(norms, 1.0)  # f / sqrt(d): not projected onto the ball
    setup = runs.HardNegativeSetup(normalize="none")
    model = torch.nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[3.0, 0.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0]]))
    z = runs.embed(model, torch.eye(4), normalize=setup.normalize)
    assert torch.allclose(z[:2], torch.tensor([[3.0, 0.0], [0.0, 4.0]],
                                              dtype=torch.float64) / math.sqrt(2))


@pytest.mark.parametrize("psi, form", [("infonce_sum", "sum"), ("triplet", "triplet")])
def test_the_pair_loss_and_its_bounds_follow_psi(psi, form):
    metrics = kind.hardneg_cell(cell(psi=psi, loss="ucl", **{**TINY, "k": 3}), None, None)
    assert metrics["theory_ucl_bound"] == theory.ucl_lower_bound(3, 3, form)
    assert metrics["theory_scl_bound"] == theory.scl_lower_bound(3, 3, form)
    if psi == "triplet":
        assert metrics["theory_ucl_bound"] == pytest.approx(3 / 3)  # Fig. 6: k / C


@pytest.mark.parametrize("psi, form", [("infonce_sum", "sum"), ("triplet", "triplet")])
def test_at_neural_collapse_the_ucl_loss_of_figs_5_and_6_is_the_bound(psi, form):
    classes, per_class, k = 5, 25, 4
    means = torch.from_numpy(theory.simplex_etf(classes, classes - 1))
    labels = torch.arange(classes * per_class) % classes
    setup = runs.HardNegativeSetup(family="ucl", k=k, psi=psi, batch_size=512)
    values = [runs.representation_losses(means[labels], labels, setup, seed=seed)["loss_ucl"]
              for seed in range(8)]
    # the same-class draws are Binomial(k, 1/C): the bound up to the resampling noise
    assert np.mean(values) == pytest.approx(theory.ucl_lower_bound(classes, k, form),
                                            abs=0.02 if psi == "triplet" else 0.005)


def test_the_near_nc_initialization_trains_towards_collapse_and_is_shared_by_a_seed():
    settings = {**TINY, "n_per_class": 10, "dim": 64, "hidden": 64, "epochs": 2,
                "record_every": 2}
    unset = kind.hardneg_cell(cell(**settings), None, None)
    assert "init_nc_gap" not in unset  # measured only where a recipe sets init
    random_start = kind.hardneg_cell(cell(init="random", **settings), None, None)
    assert random_start["init_nc_gap"] > 0.5
    near = kind.hardneg_cell(cell(init="near_nc", init_epochs=100, **settings), None, None)
    other = kind.hardneg_cell(cell(init="near_nc", init_epochs=100, loss="ucl", beta=10.0,
                                   **settings), None, None)
    assert near["init_nc_gap"] == other["init_nc_gap"]  # one near-NC model per seed
    untrained = kind.hardneg_cell(cell(init="near_nc", init_epochs=1, **settings), None, None)
    assert untrained["init_nc_gap"] > 0.5 and near["init_nc_gap"] < 0.05


def test_the_near_nc_initialization_is_hscl_at_beta_10_on_the_ball():
    torch.manual_seed(0)
    model = runs.mlp_encoder(12, 2, 16)
    x = torch.randn(18, 12) + 3 * torch.eye(3, 12).repeat_interleave(6, 0)
    y = torch.arange(3).repeat_interleave(6)
    setup = runs.HardNegativeSetup(family="ucl", beta=0.0, normalize="none", k=8, max_steps=1)
    before = [p.detach().clone() for p in model.parameters()]
    gap = runs.near_nc_initialization(model, (x, y), setup, epochs=5, seed=0)
    assert math.isfinite(gap) and runs.NEAR_NC_BETA == 10.0
    changed = [not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True)]
    assert any(changed)  # one step (max_steps) was taken


def test_the_bound_figure_draws_theory_and_reached_losses(tmp_path):
    summary = []
    for psi in ("infonce_sum", "triplet"):
        for classes in (2, 3, 5):
            for k in (1, 3):
                form = runs.PSI_BOUND_FORMS[psi]
                bound = theory.ucl_lower_bound(classes, k, form)
                for metric, value in (("theory_ucl_bound", bound), ("train_loss", bound + 0.01)):
                    summary.append({"psi": psi, "num_classes": classes, "k": k,
                                    "metric": metric, "mean": value, "ci_low": value - 0.01,
                                    "ci_high": value + 0.01, "n": 3})
    data = FigureData(summary=summary, axes=["psi", "num_classes", "k"], paper=[], rows=[],
                      out=tmp_path)
    figure = FIGURES.get("ucl_bound_vs_classes").draw(data)
    assert figure is not None and len(figure.axes) == 2
    missing = FigureData(summary=summary, axes=["psi", "k"], paper=[], rows=[], out=tmp_path)
    assert FIGURES.get("ucl_bound_vs_classes").draw(missing) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_the_quick_tier_runs_and_reports_every_claim(name, tmp_path):
    recipe = load_recipe(name)
    result = reproduce(name, "quick", out=tmp_path, progress=False)
    assert {row["metric"] for row in result.rows} >= set(recipe.metrics)
    assert [verdict.claim_id for verdict in result.verdicts] == [c.id for c in recipe.claims]
    assert all(verdict.verdict in {"supported", "not supported", "inconclusive",
                                   "not converged"} for verdict in result.verdicts)
    text, _ = check_well_formed(result.report_path)
    for verdict in result.verdicts:
        assert f"`{verdict.claim_id}`" in text
    wanted = [recipe.figure] if isinstance(recipe.figure, str) else list(recipe.figure)
    drawn = {path.name for path in tmp_path.rglob("*.png")}
    assert {f"{figure}.png" for figure in wanted} <= drawn, drawn
