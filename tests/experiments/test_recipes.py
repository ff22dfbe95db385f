"""The shipped recipes of the central paper are well formed: only the design's keys, paper
values and claims that refer to real axes and cells, tiers that claims can be tested on, and
(for pretrain recipes) a valid ``PretrainConfig`` for every cell of every tier.

This checks the YAML files on their own terms (``yaml.safe_load``); the recipe loader of
``contrastkit.experiments`` validates them again when a recipe runs.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import yaml

import contrastkit
from contrastkit import losses, theory
from contrastkit.data import DATASETS, load_dataset
from contrastkit.simulate import loss_by_name
from contrastkit.train import PretrainConfig

RECIPES = Path(contrastkit.__file__).parent / "experiments" / "recipes"
NAMES = ("table1", "fig2", "fig3", "fig4", "table4", "table5")

TOP_KEYS = {"title", "reproduces", "kind", "fixed", "notes", "base", "grid", "metrics",
            "evaluate", "paper", "claims", "tiers", "figure"}
TIER_KEYS = {"seeds", "estimate_minutes", "steps", "set", "grid", "evaluate", "fixed", "notes"}
CLAIM_KEYS = {"id", "text", "metric", "test", "along", "where", "treatment", "control",
              "across", "for_each", "target", "tolerance", "alpha"}
TIERS = ("quick", "cpu", "paper")
EVALUATE_KEYS = {"pairs", "linear_epochs", "knn_k"}
PRETRAIN_METRICS = {"linear_top1", "linear_top5", "knn_top1", "knn_top5", "neg_sim_var",
                    "neg_sim_mean", "pos_sim_mean"}
SIMULATE_METRICS = {"full_pos_mean", "full_neg_mean", "full_neg_var", "mini_neg_var",
                    "theory_full_neg_mean", "theory_mini_var_low", "theory_mini_var_high"}
SIMULATE_SETTINGS = {"loss", "temperature", "n", "d", "m", "steps", "lr", "optimizer"}
PAIRED_TESTS = {"lower", "higher", "decreasing", "increasing", "less_spread", "larger_gain"}
EXACT_TESTS = {"close", "at_least", "at_most"}


def load(name: str) -> dict:
    return yaml.safe_load((RECIPES / "similarities" / f"{name}.yaml").read_text())


def tier_grid(recipe: dict, tier: str) -> dict:
    """The tier's axes: the top-level grid with the tier's axes replacing those of that name."""
    return {**recipe["grid"], **recipe["tiers"][tier].get("grid", {})}


def cells(recipe: dict, tier: str) -> list[dict]:
    """Every cell's settings: base + tier set + the cell's axis values."""
    grid = tier_grid(recipe, tier)
    common = {**recipe.get("base", {}), **recipe["tiers"][tier].get("set", {})}
    return [{**common, **dict(zip(grid, values, strict=True))}
            for values in itertools.product(*grid.values())]


def check_axis_values(values: dict, grid: dict, where: str) -> None:
    for axis, value in values.items():
        assert axis in grid, f"{where}: {axis!r} is not an axis ({', '.join(grid)})"
        assert value in grid[axis], f"{where}: {axis}={value!r} is not in {grid[axis]}"


def check_claim(claim: dict, grid: dict, metrics: list, where: str) -> None:
    """``claim`` can be tested on the cells of ``grid``."""
    assert set(claim) <= CLAIM_KEYS, f"{where}: unknown keys {set(claim) - CLAIM_KEYS}"
    assert claim["metric"] in metrics, f"{where}: metric {claim['metric']!r} not recorded"
    assert claim["test"] in PAIRED_TESTS | EXACT_TESTS, f"{where}: test {claim['test']!r}"
    assert claim["id"] and claim["text"]
    for key in ("where", "treatment", "control"):
        check_axis_values(claim.get(key, {}), grid, f"{where}.{key}")
    for key in ("along", "across", "for_each"):
        if key in claim:
            assert claim[key] in grid, f"{where}.{key}: {claim[key]!r} is not an axis"
            assert len(grid[claim[key]]) >= 2, f"{where}.{key}: {claim[key]} has one level"
    test = claim["test"]
    if test in ("lower", "higher", "less_spread", "larger_gain"):
        assert claim["treatment"] and claim["control"], f"{where}: needs treatment and control"
        assert claim["treatment"] != claim["control"]
    if test in ("decreasing", "increasing", "larger_gain"):
        assert "along" in claim, f"{where}: {test} needs along"
    if test == "less_spread":
        assert "across" in claim, f"{where}: less_spread needs across"
    if test in EXACT_TESTS:
        target = claim["target"]
        assert isinstance(target, (int, float)) or target in metrics, f"{where}: target"
        assert claim["tolerance"] >= 0


def validate(recipe: dict, name: str) -> None:
    """Everything the design fixes about a recipe that does not need the runner."""
    assert set(recipe) <= TOP_KEYS, f"{name}: unknown keys {set(recipe) - TOP_KEYS}"
    assert recipe["title"] and "arXiv:2506.09781" in recipe["reproduces"] and recipe["notes"]
    assert recipe["kind"] in ("pretrain", "simulate")
    metrics = recipe["metrics"]
    known = PRETRAIN_METRICS if recipe["kind"] == "pretrain" else SIMULATE_METRICS
    assert set(metrics) <= known, f"{name}: unknown metrics {set(metrics) - known}"
    assert all(len(values) == len(set(values)) >= 1 for values in recipe["grid"].values())
    assert set(recipe["tiers"]) == set(TIERS), f"{name}: tiers must be {TIERS}"
    for entry in recipe.get("paper", []):
        axes = {key: value for key, value in entry.items() if key not in ("metric", "value")}
        check_axis_values(axes, recipe["grid"], f"{name}.paper")
        assert set(axes) == set(recipe["grid"]), f"{name}.paper: {entry} names no single cell"
        assert entry["metric"] in metrics and isinstance(entry["value"], (int, float))
    ids = [claim["id"] for claim in recipe["claims"]]
    assert len(ids) == len(set(ids)) >= 1, f"{name}: claim ids must be unique"
    for tier, spec in recipe["tiers"].items():
        where = f"{name}.tiers.{tier}"
        assert set(spec) <= TIER_KEYS, f"{where}: unknown keys {set(spec) - TIER_KEYS}"
        assert set(spec.get("grid", {})) <= set(recipe["grid"]), f"{where}: new axis in grid"
        assert spec["estimate_minutes"] > 0
        evaluate = {**recipe.get("evaluate", {}), **spec.get("evaluate", {})}
        assert set(evaluate) <= EVALUATE_KEYS and all(v >= 1 for v in evaluate.values())
        for claim in recipe["claims"]:
            check_claim(claim, tier_grid(recipe, tier), metrics, f"{where}.{claim['id']}")


def pretrain_config(recipe: dict, tier: str, cell: dict) -> PretrainConfig:
    """The cell's config, epochs computed from the tier's steps when steps are fixed."""
    spec = recipe["tiers"][tier]
    config = PretrainConfig().with_overrides(cell)
    if spec.get("fixed", recipe.get("fixed")) == "steps":
        assert "steps" in spec and "epochs" not in cell, f"{tier}: fixed steps needs steps"
        train_size = len(load_dataset(config.dataset, "train"))
        return config.with_overrides(
            {"epochs": math.ceil(spec["steps"] * config.batch_size / train_size)})
    assert "steps" not in spec and "epochs" in cell, f"{tier}: fixed epochs needs epochs"
    return config


def check_simulate_cell(cell: dict) -> None:
    assert set(cell) <= SIMULATE_SETTINGS, f"unknown settings {set(cell) - SIMULATE_SETTINGS}"
    loss_by_name(cell["loss"], {"temperature": cell["temperature"]})
    assert cell["n"] % cell["m"] == 0, "m must divide n (fixed mini-batches)"
    theory.minibatch_variance_bounds(cell["n"], cell["m"])
    assert cell["d"] >= cell["m"] - 1, "Theorem 5.5 needs d >= m - 1"


def test_the_six_recipes_of_the_central_paper_are_shipped():
    shipped = sorted(path.stem for path in (RECIPES / "similarities").glob("*.yaml"))
    assert shipped == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_recipe_is_well_formed(name):
    validate(load(name), name)


@pytest.mark.parametrize("name", NAMES)
def test_claims_have_enough_seeds(name):
    tiers = load(name)["tiers"]
    assert tiers["quick"]["seeds"] >= 2 and tiers["cpu"]["seeds"] >= 3
    assert tiers["paper"]["seeds"] >= 2


def test_time_budgets():
    quick = [load(name)["tiers"]["quick"]["estimate_minutes"] for name in NAMES]
    cpu = [load(name)["tiers"]["cpu"]["estimate_minutes"] for name in NAMES]
    assert max(quick) <= 2 and sum(quick) <= 8 and max(cpu) <= 60


@pytest.mark.parametrize("name", [name for name in NAMES if load(name)["kind"] == "pretrain"])
@pytest.mark.parametrize("tier", TIERS)
def test_every_pretrain_cell_builds_a_valid_config(name, tier):
    recipe = load(name)
    for cell in cells(recipe, tier):
        config = pretrain_config(recipe, tier, cell)
        assert config.dataset in DATASETS.names() and config.loss in losses.names()
        for axis in recipe["grid"]:
            assert getattr(config, axis) == cell[axis]


@pytest.mark.parametrize("name", [name for name in NAMES if load(name)["kind"] == "simulate"])
@pytest.mark.parametrize("tier", TIERS)
def test_every_simulate_cell_is_valid(name, tier):
    for cell in cells(load(name), tier):
        check_simulate_cell(cell)


def test_paper_tiers_run_the_papers_data_and_backbones():
    expected = {"table1": {"cifar100"}, "fig3": {"cifar10", "cifar100"},
                "fig4": {"cifar10", "cifar100"}, "table4": {"imagefolder"},
                "table5": {"imagefolder"}}
    for name, datasets in expected.items():
        settings = cells(load(name), "paper")
        assert {cell["dataset"] for cell in settings} == datasets, name
        backbone = "resnet50" if datasets == {"imagefolder"} else "resnet18"
        assert {cell["backbone"] for cell in settings} == {backbone}, name


@pytest.mark.parametrize("broken, message", [
    (lambda r: r.update(tier={}), "unknown keys"),
    (lambda r: r["tiers"]["quick"].update(seed=2), "unknown keys"),
    (lambda r: r["paper"].append({"batch_size": 48, "vrns": 0.0, "metric": "neg_sim_var",
                                  "value": 0.1}), "batch_size=48"),
    (lambda r: r["claims"][0].update(where={"vrns": 3.0}), "vrns=3.0"),
    (lambda r: r["claims"][0].update(along="temperature"), "not an axis"),
    (lambda r: r["tiers"]["quick"].update(grid={"batch_size": [16]}), "one level"),
])
def test_the_checks_reject_a_broken_recipe(broken, message):
    recipe = load("table1")
    broken(recipe)
    with pytest.raises(AssertionError, match=message):
        validate(recipe, "table1")


def test_the_config_check_rejects_a_bad_cell():
    recipe = load("table1")
    recipe["tiers"]["quick"]["set"]["projector_width"] = 64
    with pytest.raises(ValueError, match="projector_width"):
        pretrain_config(recipe, "quick", cells(recipe, "quick")[0])
