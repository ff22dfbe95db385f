"""A claim that the grid cannot test is refused before any cell runs: a level that no grid of
the recipe has when the recipe is loaded, and, by the dry run, a level or a trend that the
tier's own grid lacks (the sweep would otherwise train every cell, then fail)."""

from __future__ import annotations

import re

import pytest

from contrastkit.cli import main
from contrastkit.experiments import load_recipe, reproduce
from tests.experiments.tiny_recipes import SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


def _claim(**keys) -> dict:
    return {"id": "dcl_lower", "text": "DCL's negative mean is lower", "metric": "full_neg_mean",
            **keys}


#: Two temperatures in the quick tier, another pair in the cpu tier.
GRID = content_of(
    SIMULATE, grid={"loss": ["simclr", "dcl"], "temperature": [0.5, 1.0]},
    base={**SIMULATE["base"], "steps": 20},
    tiers={"quick": {"seeds": 2, "estimate_minutes": 0.1},
           "cpu": {"seeds": 3, "estimate_minutes": 0.2, "grid": {"temperature": [0.5, 2.0]}}})


def test_a_claim_level_that_no_grid_has_is_refused_when_the_recipe_loads(tmp_path, capsys):
    content = content_of(GRID, claims=[_claim(test="lower", treatment={"temperature": 3.0},
                                              control={"temperature": 0.5})])
    path = write_recipe(tmp_path, content)
    message = ("claims[0].treatment names temperature=3.0, which is not a level of the grid's "
               "temperature (0.5, 1.0, 2.0)")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_recipe(path)
    code = main(["reproduce", str(path), "--dry-run", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and message in err
    where = content_of(GRID, claims=[_claim(test="at_most", target=0.0,
                                            where={"loss": "infonce"})])
    with pytest.raises(ValueError, match="names loss='infonce', which is not a level"):
        load_recipe(write_recipe(tmp_path, where, "where"))


@pytest.mark.parametrize("claim, tier, message", [
    (_claim(test="lower", treatment={"loss": "dcl", "temperature": 2.0},
            control={"loss": "simclr", "temperature": 0.5}),
     "quick", "claim 'dcl_lower': treatment temperature=2.0 matches no cell; temperature "
              "takes 0.5, 1.0"),
    (_claim(test="lower", treatment={"loss": "dcl", "temperature": 1.0},
            control={"loss": "simclr", "temperature": 1.0}),
     "cpu", "treatment temperature=1.0 matches no cell; temperature takes 0.5, 2.0"),
    (_claim(test="decreasing", along="loss", trend="monotone", where={"temperature": 2.0}),
     "quick", "where temperature=2.0 matches no cell"),
])
def test_the_dry_run_refuses_a_claim_the_tiers_grid_cannot_test(tmp_path, claim, tier,
                                                                 message):
    path = write_recipe(tmp_path, content_of(GRID, claims=[claim]))
    load_recipe(path)  # every level is in some grid of the recipe
    with pytest.raises(ValueError) as raised:
        reproduce(path, tier, out=tmp_path / "out", dry_run=True, progress=False)
    assert str(raised.value).startswith(
        f"the claims of tiny cannot be tested on the {tier} tier's grid (nothing was run): ")
    assert message in str(raised.value) and not (tmp_path / "out").exists()
    other = "cpu" if tier == "quick" else "quick"
    if claim["test"] == "lower":  # the other tier has both levels
        assert reproduce(path, other, out=tmp_path / "out", dry_run=True, progress=False).cells


def test_the_dry_run_refuses_a_trend_along_an_axis_of_one_level(tmp_path):
    content = content_of(GRID, claims=[_claim(test="decreasing", along="temperature",
                                              trend="monotone")])
    content["tiers"]["cpu"]["grid"] = {"temperature": [2.0]}
    path = write_recipe(tmp_path, content)
    with pytest.raises(ValueError, match="along 'temperature' needs >= 2 levels, the results "
                                         "have \\[2.0\\]"):
        reproduce(path, "cpu", out=tmp_path / "out", dry_run=True, progress=False)
    assert reproduce(path, "quick", out=tmp_path / "out", dry_run=True, progress=False).cells


def test_a_sweep_checks_its_claims_before_its_first_cell(tmp_path):
    claim = _claim(test="lower", treatment={"loss": "dcl", "temperature": 2.0},
                   control={"loss": "simclr", "temperature": 0.5})
    path = write_recipe(tmp_path, content_of(GRID, claims=[claim]))
    with pytest.raises(ValueError, match="treatment temperature=2.0 matches no cell"):
        reproduce(path, "quick", out=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_a_claim_on_a_kinds_point_axis_is_left_to_the_run(tmp_path):
    """similarities/thm5-6's trend along m, the batch sizes one cell records, cannot be known
    before it runs (a dry run computes only the first point): the dry run passes it."""
    assert any(claim.along == "m" for claim in load_recipe("similarities/thm5-6").claims)
    assert reproduce("similarities/thm5-6", out=tmp_path / "out", dry_run=True,
                     progress=False).cells
