"""The recipes that cover theorems no earlier recipe tested: sigmoid/corollaries (the InfoNCE
side of ``sigmoid_free``), hardneg/thm1 (kind ``hardneg_losses``) and similarities/thm5-5, and
the theory they compare with."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from contrastkit import theory
from contrastkit.experiments import load_recipe, reproduce
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.recipe import Cell
from contrastkit.simulate.sigmoid import etf_deviation, free_infonce_runs

NAMES = ["similarities/thm5-5", "sigmoid/corollaries", "hardneg/thm1"]


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
