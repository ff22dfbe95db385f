"""The quick tier of every shipped recipe runs end to end (this is the CI run of the
reproduction): every cell has every metric, every claim gets a computed verdict, and the report
is well formed."""

from __future__ import annotations

import pytest

from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.experiments.convergence import INPUTS
from contrastkit.experiments.runner import row_metrics
from tests.experiments.report_checks import check_well_formed

VERDICTS = {"supported", "not supported", "inconclusive", "not converged"}


def test_the_central_papers_six_recipes_are_shipped():
    assert {f"similarities/{name}" for name in
            ("table1", "fig2", "fig3", "fig4", "table4", "table5")} <= set(recipe_names())


@pytest.mark.slow
@pytest.mark.parametrize("name", recipe_names())
def test_the_quick_tier_runs_and_reports(name, tmp_path):
    recipe = load_recipe(name)
    result = reproduce(name, "quick", out=tmp_path, progress=False)
    cells = recipe.cells("quick")
    points = {(row["cell"], row["seed"]) for row in result.rows}  # a cell may hold several
    metrics = row_metrics(recipe)
    # the inputs of a convergence verdict are recorded where the run has them (not in one epoch)
    required = {metric for metric in metrics if metric not in INPUTS or metric in recipe.metrics}
    recorded = {point: [row["metric"] for row in result.rows
                        if (row["cell"], row["seed"]) == point] for point in points}
    assert len(points) >= len(cells)
    for point, names in recorded.items():
        assert required <= set(names) <= set(metrics) and len(names) == len(set(names)), point
    assert [verdict.claim_id for verdict in result.verdicts] == [c.id for c in recipe.claims]
    assert all(verdict.verdict in VERDICTS for verdict in result.verdicts)
    text, _ = check_well_formed(result.report_path)
    for verdict in result.verdicts:
        assert f"`{verdict.claim_id}`" in text and f"**{verdict.verdict}**" in text
    assert (tmp_path / "results.csv").is_file() and (tmp_path / "summary.csv").is_file()
