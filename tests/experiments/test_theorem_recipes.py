"""The central paper's theorem recipes similarities/thm5-3 (Theorem 5.3 / Example 5.4,
excessive separation on free embeddings) and similarities/thm5-6 (Theorem 5.6, the gradient
with respect to a negative-pair similarity over nested batches), and their cell kinds: the
recipes load and every tier builds, the quick tiers run and report with every claim supported,
the kinds record what the theorems compare, and bad settings name the cell and the setting."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contrastkit import losses, theory
from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.kinds.excessive_separation import condition_margin
from contrastkit.experiments.kinds.similarity_gradient import (
    batch_gradient,
    batch_sizes,
    draw_pairs,
)
from contrastkit.experiments.recipe import Cell
from tests.experiments.report_checks import check_well_formed

NAMES = ["similarities/thm5-3", "similarities/thm5-6"]


def _cell(kind: str, **settings) -> Cell:
    return Cell("test", "quick", "cell", {}, 0, settings, {}, kind)


def test_the_recipes_are_shipped_and_cite_the_theorems():
    assert set(NAMES) <= set(recipe_names())
    for name, theorem in zip(NAMES, ("Theorem 5.3", "Theorem 5.6"), strict=True):
        recipe = load_recipe(name)
        assert "arXiv:2506.09781" in recipe.reproduces and theorem in recipe.reproduces
        assert recipe.notes and recipe.claims and recipe.protocol is not None


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_cell_of_every_tier_builds(name, tier, tmp_path):
    result = reproduce(name, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and result.cells and not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_quick_tier_runs_reports_and_supports_every_exact_claim(name, tmp_path):
    """The quick tier (2 seeds, "too small to be evidence") runs and reports; its exact checks
    hold, and no t-test contradicts its claim. A t-test over 2 seeds, Holm-adjusted across
    its steps and the report's claims, may be inconclusive: the cpu tier's 5 seeds judge it."""
    recipe = load_recipe(name)
    result = reproduce(name, "quick", out=tmp_path, progress=False)
    assert {row["metric"] for row in result.rows} == set(recipe.metrics)
    assert [verdict.claim_id for verdict in result.verdicts] == [c.id for c in recipe.claims]
    wrong = [(verdict.claim_id, verdict.detail) for verdict in result.verdicts
             if verdict.verdict != "supported"
             and (verdict.family == 0 or verdict.verdict != "inconclusive")]
    assert not wrong, wrong
    text, _ = check_well_formed(result.report_path)
    for verdict in result.verdicts:
        assert f"`{verdict.claim_id}`" in text


def test_the_cpu_tier_of_thm5_3_has_both_sides_of_condition_8_at_every_n():
    recipe = load_recipe("similarities/thm5-3")
    sides: dict[int, set] = {}
    for cell in recipe.cells("cpu", seeds=1):
        settings = cell.settings
        margin = condition_margin(settings["N"], settings["t"], settings["b"])
        assert abs(margin) > 0.5  # every point away from the threshold, as the notes say
        sides.setdefault(settings["N"], set()).add(margin > 0)
    assert sides == {4: {True, False}, 8: {True, False}, 16: {True, False}}


# --- the similarity_gradient kind (Theorem 5.6) ----------------------------------------------

def test_batch_sizes_double_up_to_n():
    assert batch_sizes(2, 16) == [2, 4, 8, 16]
    assert batch_sizes(2, 12) == [2, 4, 8, 12]
    assert batch_sizes(3, 4) == [3, 4]


@pytest.mark.parametrize("name, fn", [("info_nce", losses.info_nce), ("simclr", losses.simclr),
                                      ("dcl", losses.dcl)])
def test_autograd_through_the_library_loss_is_the_gradient_in_the_similarities(name, fn):
    u, v = draw_pairs("clustered", 10, 6, seed=2, classes=3)
    measured = batch_gradient(fn, u, v, 0.2).numpy()
    np.testing.assert_allclose(measured, theory.similarity_gradient(u, v, 0.2, name),
                               rtol=1e-10)


def test_the_structures_are_what_they_say():
    u, v = draw_pairs("etf", 6, 8, seed=1)
    assert torch.equal(u, v)
    similarities = (u @ v.T).numpy()
    assert np.allclose(np.diag(similarities), 1.0)
    assert np.allclose(similarities[~np.eye(6, dtype=bool)], -1 / 5)
    u, v = draw_pairs("clustered", 20, 64, seed=0, classes=2, noise=0.1)
    similarities = (u @ v.T).numpy()
    assert similarities[0, 0] > 0.9 and similarities[0, 2] > 0.9  # same class (0 and 2)
    assert abs(similarities[0, 1]) < 0.5  # classes 0 and 1
    for structure in ("sphere", "clustered", "etf"):
        u, v = draw_pairs(structure, 8, 8, seed=3)
        assert torch.allclose(u.norm(dim=1), torch.ones(8, dtype=torch.float64))


def test_a_gradient_cell_records_one_point_per_nested_pair_of_batches():
    points = CELL_KINDS.get("similarity_gradient").run(
        _cell("similarity_gradient", loss="info_nce", structure="sphere", n=16, d=5,
              temperature=0.5), None, None)
    assert [point["axes"] for point in points] == [{"m": 4}, {"m": 8}, {"m": 16}]
    u, v = draw_pairs("sphere", 16, 5, seed=0)
    for point, (m1, m2) in zip(points, [(2, 4), (4, 8), (8, 16)], strict=True):
        metrics = point["metrics"]
        small = theory.similarity_gradient(u[:m1], v[:m1], 0.5)
        large = theory.similarity_gradient(u[:m2], v[:m2], 0.5)
        assert metrics["grad"] == pytest.approx(large[0, 1], rel=1e-12)
        assert metrics["grad_smaller"] == pytest.approx(small[0, 1], rel=1e-12)
        assert metrics["grad_theory"] == large[0, 1]
        off = ~np.eye(m1, dtype=bool)
        assert metrics["ratio_to_smaller"] == pytest.approx(
            (large[:m1, :m1][off] / small[off]).max(), rel=1e-12)
        assert metrics["ratio_bound"] == m1 / m2
        assert 0 < metrics["ratio_to_smaller"] <= metrics["ratio_bound"]
        assert metrics["grad_rel_error"] < 1e-12 and metrics["grad_min"] > 0


def test_the_dry_run_of_a_gradient_cell_computes_its_first_point_only():
    cell = _cell("similarity_gradient", loss="dcl", structure="etf", n=64, d=64,
                 temperature=0.1)
    assert [point["axes"] for point in CELL_KINDS.get("similarity_gradient").run(
        cell, None, 0)] == [{"m": 4}]


# --- the excessive_separation kind (Theorem 5.3) ---------------------------------------------

def test_condition_margin_is_condition_10_in_log_space():
    for n, t, b in [(8, 2.0, 1.0), (8, 2.0, 3.0), (4, 5.0, 1.0), (16, 5.0, 3.0), (5, 1.0, 0.0)]:
        lhs = (1 + math.exp(t / (n - 1) + b)) / (1 + math.exp(t - b))
        assert condition_margin(n, t, b) == pytest.approx(math.log((n - 2) / 2) - math.log(lhs))
        assert (condition_margin(n, t, b) > 0) == theory.sigmoid_excessive_separation(n, t, b)


@pytest.mark.parametrize("b, condition", [(-1.0, "holds"), (3.0, "fails")])
def test_a_separation_cell_reaches_the_optimum_on_its_side_of_condition_8(b, condition):
    run = CELL_KINDS.get("excessive_separation").run
    (cross,) = run(_cell("excessive_separation", N=5, t=2.0, b=b, steps=600), None, None)
    assert cross["axes"] == {"condition": condition}
    metrics = cross["metrics"]
    optimum = theory.sigmoid_optimum(5, 2.0, b)
    assert metrics["theory_pos"] == optimum.positive_similarity
    assert metrics["pos_mean"] == pytest.approx(optimum.positive_similarity, abs=1e-6)
    assert metrics["neg_mean"] == pytest.approx(optimum.negative_similarity, abs=1e-6)
    assert metrics["loss"] == pytest.approx(optimum.loss, abs=1e-9)
    assert metrics["simplex_neg"] == -0.25
    assert (metrics["pos_gap"] > 0.01) == (condition == "holds")
    (within,) = run(_cell("excessive_separation", N=5, t=2.0, b=b, steps=600,
                          negatives="cross+within"), None, None)
    assert within["axes"] == {"condition": condition}
    assert within["metrics"]["pos_mean"] == pytest.approx(1.0, abs=1e-6)
    assert within["metrics"]["neg_mean"] == pytest.approx(-0.25, abs=1e-6)
    assert within["metrics"]["loss"] == pytest.approx(within["metrics"]["theory_loss"],
                                                      abs=1e-9)


@pytest.mark.parametrize("kind, settings, message", [
    ("similarity_gradient", {"n": 8, "d": 4}, "needs temperature"),
    ("similarity_gradient", {"n": 8, "d": 4, "temperature": 0.5, "loss": "dhel"},
     "loss must be one of info_nce, simclr, dcl"),
    ("similarity_gradient", {"n": 8, "d": 4, "temperature": 0.5, "structure": "grid"},
     "structure must be one of"),
    ("similarity_gradient", {"n": 8, "d": 4, "temperature": 0.5, "structure": "etf"},
     "d must be >= n - 1"),
    ("similarity_gradient", {"n": 8, "d": 4, "temperature": 0.5, "m_min": 8},
     "m_min must be < n = 8"),
    ("excessive_separation", {"N": 8, "t": 1.0}, "needs b"),
    ("excessive_separation", {"N": 8, "d": 7, "t": 1.0, "b": 0.0}, "d must be >= N = 8"),
    ("excessive_separation", {"N": 8, "t": 1.0, "b": 0.0, "negatives": "within"},
     "negatives must be one of"),
    ("excessive_separation", {"N": 2, "t": 1.0, "b": 0.0}, "N must be"),
])
def test_bad_settings_name_the_cell_and_the_setting(kind, settings, message):
    with pytest.raises(ValueError, match=f"cell cell of test: .*{message}"):
        CELL_KINDS.get(kind).run(_cell(kind, **settings), None, 0)
