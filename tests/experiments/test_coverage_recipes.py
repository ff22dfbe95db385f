"""The recipes that cover theorems no earlier recipe tested: sigmoid/corollaries (the InfoNCE
side of ``sigmoid_free``), hardneg/thm1 (kind ``hardneg_losses``), similarities/thm5-5 and
lmcl/thm1 (kind ``lmcl_free``), and the theory and metrics they compare with."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from contrastkit import theory
from contrastkit.experiments import load_recipe, reproduce
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.kinds.lmcl_free import (
    angle_cover,
    covering_radius,
    distance_cover,
    spherical_coordinates,
)
from contrastkit.experiments.recipe import Cell
from contrastkit.simulate.sigmoid import etf_deviation, free_infonce_runs

NAMES = ["similarities/thm5-5", "sigmoid/corollaries", "hardneg/thm1", "lmcl/thm1"]


def _cell(kind: str, **settings) -> Cell:
    return Cell("test", "quick", "cell", {}, 0, settings, {}, kind)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_cell_of_every_tier_builds(name, tier, tmp_path):
    assert load_recipe(name).claims
    result = reproduce(name, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and result.cells and not list(tmp_path.iterdir())


@pytest.mark.parametrize("n, t", [(3, 0.25), (8, 1.0), (16, 4.0)])
def test_the_infonce_ccem_minimum_is_the_etf(n, t):
    """Corollary 1 in closed form: on the CCEM, 2 log(1 + (n-1) exp((c2 - c)/t)) is least at
    c = 1, where c2 - c = -n/(n-1)."""
    c, loss = theory.infonce_ccem_minimum(n, t)
    assert c == 1.0
    assert loss == pytest.approx(2 * math.log1p((n - 1) * math.exp(-n / ((n - 1) * t))),
                                 rel=1e-14)


def test_etf_deviation_is_zero_at_the_etf_and_one_minus_c_off_it():
    u, v = (torch.as_tensor(x)[None] for x in theory.ccem(5, 5, 0.0))
    assert float(etf_deviation(u, v)[0]) < 1e-14
    u, v = (torch.as_tensor(x)[None] for x in theory.ccem(5, 5, 1.0))
    assert float(etf_deviation(u, v)[0]) == pytest.approx(1.0, abs=1e-14)  # 1 - u_i.v_i


def test_free_infonce_runs_reach_the_simplex_etf():
    u, v = free_infonce_runs(5, 5, [0.5, 2.0], steps=2000, lr=0.3, seed=1)
    assert float(etf_deviation(u, v).max()) < 1e-6


def test_a_sigmoid_free_cell_with_infonce_records_the_ccem_minimum():
    points = CELL_KINDS.get("sigmoid_free").run(
        _cell("sigmoid_free", N=4, loss="infonce", t_min=1.0, t_max=1.0, t_count=1,
              steps=2000, lr=0.3), None, None)
    metrics = points[0]["metrics"]
    assert metrics["loss_measured"] == pytest.approx(metrics["loss_theory"], abs=1e-9)
    assert metrics["s_theory"] == 1.0 and metrics["etf_deviation"] < 1e-6


def test_a_sigmoid_free_cell_refuses_an_unknown_loss():
    with pytest.raises(ValueError, match="loss must be one of sigmoid, infonce, got 'nce'"):
        CELL_KINDS.get("sigmoid_free").run(_cell("sigmoid_free", N=4, loss="nce"), None, 0)


def _enumerated(z, labels, k, beta, supervised):
    """hard and reference losses by plain loops over every k-tuple (mean-form InfoNCE)."""
    reference, hard = [], []
    for anchor, positive in itertools.permutations(range(len(z)), 2):
        if labels[anchor] != labels[positive]:
            continue
        pool = [j for j in range(len(z)) if not supervised or labels[j] != labels[anchor]]
        weights = {j: math.exp(beta * z[anchor] @ z[j]) for j in pool}
        total = sum(weights.values()) ** k
        ref = tilted = 0.0
        for negatives in itertools.product(pool, repeat=k):
            psi = math.log1p(sum(math.exp(z[anchor] @ (z[j] - z[positive]))
                                 for j in negatives) / k)
            ref += psi / len(pool) ** k
            tilted += psi * math.prod(weights[j] for j in negatives) / total
        reference.append(ref)
        hard.append(tilted)
    return np.mean(reference), np.mean(hard)


@pytest.mark.parametrize("supervised", [True, False])
def test_the_exact_hard_negative_losses_match_plain_enumeration(supervised):
    rng = np.random.default_rng(3)
    z = rng.normal(size=(6, 2)) / 2
    labels = np.array([0, 0, 1, 1, 2, 2])
    out = theory.hard_negative_losses(z, labels, k=2, beta=3.0, supervised=supervised)
    reference, hard = _enumerated(z, labels, 2, 3.0, supervised)
    assert out["reference"] == pytest.approx(reference, rel=1e-12)
    assert out["hard"] == pytest.approx(hard, rel=1e-12)
    assert out["hard"] > out["reference"] and out["min_pair_gap"] > 0


def test_a_hardneg_losses_cell_checks_its_structure():
    run = CELL_KINDS.get("hardneg_losses").run
    metrics = run(_cell("hardneg_losses", structure="clustered", dim=3, k=1, beta=0.0))
    assert metrics["loss_hard"] == pytest.approx(metrics["loss_reference"], rel=1e-13)
    with pytest.raises(ValueError, match="structure must be one of ball, sphere, clustered"):
        run(_cell("hardneg_losses", structure="cube"))
    with pytest.raises(ValueError, match="clustered needs dim >= classes = 3, got 2"):
        run(_cell("hardneg_losses", structure="clustered", dim=2))


def _brute_cover(values, low, high, circular=False, points=200_001):
    """max over a fine grid of x in [low, high] of the distance to the nearest value."""
    grid = np.linspace(low, high, points)[:, None]
    gaps = np.abs(grid - np.asarray(values)[None, :])
    if circular:
        gaps = np.minimum(gaps, (high - low) - gaps)
    return gaps.min(axis=1).max()


@pytest.mark.parametrize("circular", [False, True])
def test_the_covering_radius_matches_a_grid_search(circular):
    rng = np.random.default_rng(0)
    for values in (rng.uniform(0.2, 0.9, 7), np.array([0.5]), rng.uniform(0, 1, 30)):
        assert covering_radius(values, 0.0, 1.0, circular) == pytest.approx(
            _brute_cover(values, 0.0, 1.0, circular), abs=1e-5)


def test_the_distance_cover_is_theorem_1s_max_over_mu_of_min_over_pairs():
    rng = np.random.default_rng(1)
    u = torch.nn.functional.normalize(torch.as_tensor(rng.normal(size=(9, 3))), dim=1)
    distances = [(1 - float(u[i] @ u[j])) / 2 for i in range(9) for j in range(i + 1, 9)]
    assert distance_cover(u) == pytest.approx(_brute_cover(distances, 0.0, 1.0), abs=1e-5)


def test_the_regular_polygons_covers_fall_as_pi_over_2n():
    """The regular N-gon: the distances (1 - cos(2 pi k / N)) / 2, whose widest gap is near
    1/2 (about pi / N), and the angles 2 pi / N apart (cover pi / N)."""
    for n in (8, 16, 64):
        angles = 2 * math.pi * np.arange(n) / n + 0.3
        u = torch.as_tensor(np.stack([np.cos(angles), np.sin(angles)], axis=1))
        assert angle_cover(u) == pytest.approx(math.pi / n, rel=1e-12)
        assert distance_cover(u) == pytest.approx(math.pi / (2 * n), rel=0.15)


def test_spherical_coordinates_rebuild_the_points():
    rng = np.random.default_rng(2)
    u = torch.nn.functional.normalize(torch.as_tensor(rng.normal(size=(20, 4))), dim=1)
    theta = spherical_coordinates(u)
    assert theta[:, :2].min() >= 0 and theta[:, :2].max() <= math.pi
    assert theta[:, 2].min() >= 0 and theta[:, 2].max() < 2 * math.pi
    sines = torch.cumprod(torch.cat([torch.ones(20, 1, dtype=u.dtype),
                                     torch.sin(theta)], dim=1), dim=1)
    rebuilt = torch.stack([sines[:, 0] * torch.cos(theta[:, 0]),
                           sines[:, 1] * torch.cos(theta[:, 1]),
                           sines[:, 2] * torch.cos(theta[:, 2]),
                           sines[:, 2] * torch.sin(theta[:, 2])], dim=1)
    assert torch.allclose(rebuilt, u, atol=1e-12)


def test_an_lmcl_free_cell_keeps_its_best_restart_and_judges_its_curves():
    metrics = CELL_KINDS.get("lmcl_free").run(
        _cell("lmcl_free", N=4, d=3, restarts=2, steps=300), None, None)
    assert metrics["distance_cover"] == pytest.approx(2 / 3, abs=1e-4)  # the simplex: 2/3 each
    assert metrics["convergence_rule"] == 3.0
    assert {"drift_loss", "drift_distance_cover", "drift_angle_cover"} <= set(metrics)
    restarts = [CELL_KINDS.get("lmcl_free").run(
        Cell("test", "quick", "cell", {}, seed, {"N": 8, "d": 2, "restarts": 1, "steps": 100},
             {}, "lmcl_free"), None, None)["final_loss"] for seed in (0, 1)]
    best = CELL_KINDS.get("lmcl_free").run(
        _cell("lmcl_free", N=8, d=2, restarts=2, steps=100), None, None)
    assert best["final_loss"] == min(restarts)


def test_an_lmcl_free_cell_refuses_no_restarts():
    with pytest.raises(ValueError, match="cell cell of test: restarts must be"):
        CELL_KINDS.get("lmcl_free").run(_cell("lmcl_free", restarts=0), None, 0)
