"""The shipped recipes of the central paper: each loads through the recipe checks, every cell of
every tier builds (the dry run), their claims can be tested (at least two seeds, at least two
levels of every axis a claim compares along), the time budgets hold, and the paper tiers run the
paper's data and backbones. The format itself is tested in test_recipe.py. Every shipped
recipe's notes state the epochs its tiers train."""

from __future__ import annotations

import re

import pytest

from contrastkit.experiments import load_recipe, recipe_names, reproduce
from tests.experiments.fake_data import FAKE_DATA, datasets_of, use_fake_mnist5k

NAMES = [f"similarities/{name}" for name in ("table1", "fig2", "fig3", "fig4", "table4",
                                                "table5")]
TIERS = ("quick", "cpu", "paper")
#: The theorem recipes (simulations, no pretraining), tested in test_theorem_recipes.py.
THEOREMS = [f"similarities/{name}" for name in ("thm5-3", "thm5-5", "thm5-6")]


def test_the_recipes_of_the_central_paper_are_shipped():
    assert [name for name in recipe_names() if name.startswith("similarities/")] == sorted(
        NAMES + THEOREMS)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tier", TIERS)
def test_every_cell_of_every_tier_builds(name, tier, tmp_path, monkeypatch):
    """The dry run builds every cell and reads the data once: the datasets that need a download
    or an extra (the paper tier's, MNIST-5k) are small fake files in their real formats."""
    data = tmp_path / "data"
    datasets = datasets_of(load_recipe(name), tier)
    for dataset in datasets & set(FAKE_DATA):
        FAKE_DATA[dataset](data)
    if "mnist5k" in datasets:
        use_fake_mnist5k(tmp_path / "mnist5k", monkeypatch)
    out = tmp_path / "out"
    result = reproduce(name, tier, out=out, dry_run=True, progress=False,
                       data_dir=str(data) if data.exists() else None)
    assert result.dry_run and result.cells and not out.exists()


@pytest.mark.parametrize("name", NAMES)
def test_claims_can_be_tested_in_every_tier(name):
    recipe = load_recipe(name)
    assert "arXiv:2506.09781" in recipe.reproduces and recipe.notes and recipe.claims
    for tier in TIERS:
        assert recipe.tiers[tier].seeds >= (3 if tier == "cpu" else 2), (name, tier)
        axes = recipe.axes(tier)
        for claim in recipe.claims:
            for_each = [claim.for_each] if isinstance(claim.for_each, str) else (
                claim.for_each or [])
            for compared in (claim.along, claim.across, *for_each):
                if compared is not None:
                    assert len(axes[compared]) >= 2, (name, tier, claim.id, compared)


def test_time_budgets():
    recipes = [load_recipe(name) for name in NAMES]
    quick = [recipe.tiers["quick"].estimate_minutes for recipe in recipes]
    cpu = [recipe.tiers["cpu"].estimate_minutes for recipe in recipes]
    assert max(quick) <= 2 and sum(quick) <= 8 and max(cpu) <= 60


@pytest.mark.parametrize("name, datasets, backbone", [
    ("similarities/table1", {"cifar100"}, "resnet18"),
    ("similarities/fig3", {"cifar10", "cifar100"}, "resnet18"),
    ("similarities/fig4", {"cifar10", "cifar100"}, "resnet18"),
    ("similarities/table4", {"imagefolder"}, "resnet50"),
    ("similarities/table5", {"imagefolder"}, "resnet50"),
])
def test_paper_tiers_run_the_papers_data_and_backbones(name, datasets, backbone):
    cells = load_recipe(name).cells("paper")
    assert {cell.settings["dataset"] for cell in cells} == datasets
    assert {cell.settings["backbone"] for cell in cells} == {backbone}
    assert {cell.settings["epochs"] for cell in cells} == {100 if name.endswith("5") else 200}


#: "the cpu tier trains 200", "the cpu tier's 100 epochs": a tier's length stated in a note.
TIER_EPOCHS = re.compile(r"the (quick|cpu|paper) tier(?: trains|'s) (\d+)")


def stated_tier_epochs(recipe) -> list[tuple[str, int]]:
    """Each (tier, epochs) that the recipe's notes, or its tiers' notes, state."""
    notes = [recipe.notes or "", *(tier.notes or "" for tier in recipe.tiers.values())]
    return [(tier, int(epochs)) for text in notes
            for tier, epochs in TIER_EPOCHS.findall(" ".join(text.split()))]


@pytest.mark.parametrize("name", [name for name in recipe_names()
                                  if stated_tier_epochs(load_recipe(name))])
def test_the_epochs_a_recipe_note_states_are_its_tiers(name):
    """A note printed into every report says how long a tier trains: its cells train that long."""
    recipe = load_recipe(name)
    for tier, epochs in stated_tier_epochs(recipe):
        trained = {cell.settings.get("epochs") for cell in recipe.cells(tier)}
        assert trained == {epochs}, f"{name}: the notes say the {tier} tier trains {epochs} " \
                                    f"epochs; its cells train {sorted(trained, key=str)}"
