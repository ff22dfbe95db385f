"""Thresholds that mean the same thing are the same in every recipe: "near / reaches neural
collapse" (hardneg/fig2 and hardneg/fig4), "never below the bound" (float rounding only, in
hardneg/bounds and hardneg/bound-ck), "empties the margin band" (every LMCL recipe)."""

from __future__ import annotations

from contrastkit.experiments import load_recipe, recipe_names


def _claims():
    for name in recipe_names():
        for claim in load_recipe(name).claims:
            yield name, claim


def test_near_neural_collapse_has_one_threshold():
    thresholds = {(name, claim.id): claim.target for name, claim in _claims()
                  if claim.metric in ("nc_gap", "init_nc_gap") and claim.test in
                  ("at_most", "at_least") and not isinstance(claim.target, str)}
    assert {"hardneg/fig2", "hardneg/fig4"} <= {name for name, _ in thresholds}
    assert set(thresholds.values()) == {0.05}


def test_never_below_a_bound_tolerates_rounding_only():
    tolerances = {(name, claim.id): claim.tolerance for name, claim in _claims()
                  if "never_below" in claim.id}
    assert {"hardneg/bounds", "hardneg/bound-ck"} <= {name for name, _ in tolerances}
    assert set(tolerances.values()) == {1e-5}


def test_every_claim_that_the_margin_band_empties_states_the_same_minimum_effect():
    shares = {(name, claim.id): claim.min_share for name, claim in _claims()
              if claim.metric == "margin_fraction" and claim.test == "lower"}
    assert len(shares) >= 7
    assert set(shares.values()) == {0.5}


def test_every_trend_states_how_it_reads():
    trends = [claim.trend for _, claim in _claims() if claim.test in ("decreasing",
                                                                      "increasing")]
    assert trends and set(trends) <= {"monotone", "end_to_end"}
