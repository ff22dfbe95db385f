"""The sigmoid paper's recipes (sigmoid/fig1, fig2, fig3) and their cell kinds: each tier builds
(the dry run), a sweep cell records one point per t = b with the theory beside it, the CCEM cell
measures Proposition 1, and bad settings name the setting."""

from __future__ import annotations

import math

import pytest

from contrastkit import theory
from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.kinds.sigmoid import t_values
from contrastkit.experiments.recipe import Cell

NAMES = ["sigmoid/corollaries", "sigmoid/fig1", "sigmoid/fig2", "sigmoid/fig3"]


def _cell(kind: str, **settings) -> Cell:
    return Cell("test", "quick", "cell", {}, 0, settings, {}, kind)


def test_the_recipes_are_shipped_and_cite_the_paper():
    assert [name for name in recipe_names() if name.startswith("sigmoid/")] == NAMES
    for name in NAMES:
        recipe = load_recipe(name)
        assert "arXiv:2402.12613" in recipe.reproduces and recipe.notes and recipe.claims


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_cell_of_every_tier_builds(name, tier, tmp_path):
    if tier not in load_recipe(name).tiers:
        pytest.skip(f"{name} has no {tier} tier")
    result = reproduce(name, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and result.cells and not list(tmp_path.iterdir())


def test_the_fig2_cpu_tier_covers_the_papers_figure():
    recipe = load_recipe("sigmoid/fig2")
    cells = recipe.cells("cpu", seeds=1)
    assert {cell.axes["dim"] for cell in cells} == {"full", "half"}
    assert len({cell.axes["N"] for cell in cells}) >= 20
    settings = cells[0].settings
    ts = t_values(settings["t_min"], settings["t_max"], settings["t_count"])
    assert len(ts) >= 20 and ts[0] == 0.1 and ts[-1] == 5.0


def test_t_values_read_as_written():
    assert t_values(0.1, 0.5, 5) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert t_values(2.0, 2.0, 1) == [2.0]


@pytest.mark.parametrize("dim, d", [("full", 7), ("half", 4)])
def test_a_sweep_cell_records_one_point_per_t_with_the_theory(dim, d):
    points = CELL_KINDS.get("sigmoid_free").run(
        _cell("sigmoid_free", N=7, dim=dim, t_min=0.2, t_max=2.0, t_count=3, steps=2000),
        None, None)
    assert [point["axes"] for point in points] == [
        {"d": d, "t": t, "b": t, "regime": theory.sigmoid_optimum(7, t, t).regime}
        for t in (0.2, 1.1, 2.0)]
    for point in points:
        t = point["axes"]["t"]
        optimum = theory.sigmoid_optimum(7, t, t)
        metrics = point["metrics"]
        assert metrics["s_theory"] == optimum.normalized_positive
        assert metrics["loss_theory"] == optimum.loss
        assert metrics["loss_measured"] >= optimum.loss - 1e-12
        if dim == "full":
            assert metrics["s_measured"] == pytest.approx(optimum.normalized_positive, abs=1e-4)


def test_the_ccem_cell_measures_proposition_1():
    run = CELL_KINDS.get("ccem").run
    at_one = run(_cell("ccem", n=4, d=5, delta=1.0), None, None)
    assert at_one["pos_sim"] == pytest.approx(0.0, abs=1e-15)
    assert at_one["neg_sim"] == pytest.approx(-(1 / 3 + 1) / 2, abs=1e-15)
    assert at_one["angle_deg"] == pytest.approx(90.0, abs=1e-9)
    at_infinity = run(_cell("ccem", n=3, d=3, delta=math.inf), None, None)
    assert at_infinity["neg_sim"] == -1.0 and at_infinity["theory_angle_deg"] == 180.0
    assert at_infinity["angle_deg"] == pytest.approx(180.0, abs=1e-9)


@pytest.mark.parametrize("kind, settings, message", [
    ("sigmoid_free", {"dim": "full"}, "a sigmoid sweep needs N"),
    ("sigmoid_free", {"N": 5, "dim": "third"}, "dim must be one of full, half, got 'third'"),
    ("sigmoid_free", {"N": 5, "t_min": 2.0, "t_max": 1.0}, "t_max must be >= t_min = 2.0"),
    ("sigmoid_free", {"N": 5, "t_min": -1.0}, "t_min must be > 0"),
    ("sigmoid_encoder", {"N": 5, "hidden": 0}, "hidden must be"),
    ("ccem", {"n": 4, "d": 3, "delta": 1.0}, "d must be >= n"),
    ("ccem", {"n": 3, "d": 3}, "a CCEM needs delta"),
])
def test_bad_settings_name_the_cell_and_the_setting(kind, settings, message):
    with pytest.raises(ValueError, match=f"cell cell of test: .*{message}"):
        CELL_KINDS.get(kind).run(_cell(kind, **settings), None, 0)
