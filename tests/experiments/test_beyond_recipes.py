"""The recipes beyond the papers: their claims compare cells that every tier has; of
beyond/vrns-vs-large-batch, its quick and cpu cells build, equal steps hold across the two
batches, the large batch runs cached in chunks of 64, and the paper tier is CIFAR-100 with
ResNet-18."""

from __future__ import annotations

import pytest

from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.experiments.recipe import train_size
from tests.data import archives

NAME = "beyond/vrns-vs-large-batch"


def test_it_is_shipped():
    assert NAME in recipe_names()


@pytest.mark.parametrize("name", [NAME, "beyond/siglip-phase", "beyond/text-vrns"])
@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_claim_compares_cells_of_every_tier(name, tier):
    recipe = load_recipe(name)
    axes = recipe.axes(tier)
    assert recipe.tiers[tier].seeds >= (3 if tier == "cpu" else 2)
    for claim in recipe.claims:
        for side in (claim.treatment, claim.control, claim.where):
            for axis, value in side.items():
                assert value in axes[axis], (tier, claim.id, axis, value)


@pytest.mark.parametrize("tier", ["quick", "cpu"])
def test_every_cell_builds(tier, tmp_path):
    result = reproduce(NAME, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and len(result.cells) == 4 * load_recipe(NAME).tiers[tier].seeds


def test_both_batches_take_the_same_steps_the_large_one_cached(tmp_path):
    """Equal optimizer steps up to whole epochs (less than one epoch of the small batch)."""
    archives.write_cifar100_archive(tmp_path, count=3000)
    cells = load_recipe(NAME).cells("paper", data_dir=str(tmp_path))
    size = train_size("cifar100", str(tmp_path))
    steps = {cell.settings["batch_size"]: cell.settings["epochs"] * (size // cell.settings[
        "batch_size"]) for cell in cells}
    assert set(steps) == {64, 512}
    assert abs(steps[512] - steps[64]) < size // 64
    assert {cell.settings["grad_cache_chunk"] for cell in cells} == {64}
    assert {cell.settings["warmup_share"] for cell in cells} == {0.05}  # the same share at both
    assert {(cell.settings["dataset"], cell.settings["backbone"]) for cell in cells} == {
        ("cifar100", "resnet18")}
