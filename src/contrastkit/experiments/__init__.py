"""Reproducing papers' claims: recipes (YAML files shipped under ``experiments/recipes/``),
the sweep runner, the statistics and claims, and the report.

``contrastkit.experiments.reproduce("similarities/table1")`` (or ``contrastkit reproduce``)
runs a recipe's tier and writes results.csv, summary.csv and report.md. Names are imported on
first use, so listing recipes does not load torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit.lazy_exports import lazy_exports

# Imported here (it imports nothing heavy), so that the name ``reproduce`` is the function,
# not its submodule of the same name.
from .reproduce import Reproduction as Reproduction
from .reproduce import reproduce as reproduce
from .reproduce import reproduce_all as reproduce_all

_EXPORTS = {
    "Cell": "recipe",
    "ClaimSpec": "recipe",
    "Recipe": "recipe",
    "Tier": "recipe",
    "evaluate_claims": "claims",
    "load_recipe": "recipe",
    "mean_interval": "stats",
    "paired_test": "stats",
    "publish": "reproduce",
    "regenerate": "reproduce",
    "recipe_names": "recipe",
    "run_cell": "runner",
    "run_recipe": "runner",
    "summarize": "results",
    "write_report": "report",
    "write_results": "results",
    "write_summary": "results",
}

__all__ = sorted([*_EXPORTS, "Reproduction", "reproduce", "reproduce_all"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

# The names as a type checker sees them (tests/test_typing.py holds them to _EXPORTS).
if TYPE_CHECKING:
    from .claims import evaluate_claims as evaluate_claims
    from .recipe import Cell as Cell
    from .recipe import ClaimSpec as ClaimSpec
    from .recipe import Recipe as Recipe
    from .recipe import Tier as Tier
    from .recipe import load_recipe as load_recipe
    from .recipe import recipe_names as recipe_names
    from .report import write_report as write_report
    from .reproduce import publish as publish
    from .reproduce import regenerate as regenerate
    from .results import summarize as summarize
    from .results import write_results as write_results
    from .results import write_summary as write_summary
    from .runner import run_cell as run_cell
    from .runner import run_recipe as run_recipe
    from .stats import mean_interval as mean_interval
    from .stats import paired_test as paired_test
