"""beyond/siglip-phase: its starts span the three regions of the sigmoid loss's phase diagram
for the batch it trains (checked against the theory), and its cells are image-text SigLIP runs
that build (test_beyond_recipes.py checks that its claims compare cells every tier has)."""

from __future__ import annotations

import pytest

from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.theory import sigmoid_optimum

NAME = "beyond/siglip-phase"


def test_it_is_shipped():
    assert NAME in recipe_names()


@pytest.mark.parametrize("tier", ["cpu", "paper"])
def test_the_starts_span_the_three_regions_of_the_phase_diagram(tier):
    cells = load_recipe(NAME).cells(tier, seeds=1)
    regimes = {}
    for cell in cells:
        settings = cell.settings
        assert (settings["task"], settings["loss"]) == ("image_text", "siglip")
        start = (settings["siglip_scale"], -settings["siglip_bias"])
        regimes[start] = sigmoid_optimum(settings["batch_size"], *start).regime
    assert regimes == {(1.0, 10.0): "etf", (10.0, 10.0): "etf", (10.0, 0.0): "intermediate",
                       (1.0, 0.0): "antipodal"}
    assert {cell.settings["learn_temperature"] for cell in cells} == {False, True}


@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_cell_builds(tier, tmp_path):
    result = reproduce(NAME, tier, out=tmp_path, dry_run=True, progress=False)
    points = 4 if tier == "quick" else 8  # the quick tier has only the t = 1 starts
    assert result.dry_run and len(result.cells) == points * load_recipe(NAME).tiers[tier].seeds
