"""Reproducing papers' claims: recipes (YAML files shipped under ``experiments/recipes/``),
the sweep runner, the statistics and claims, and the report.

``contrastkit.experiments.reproduce("similarities/table1")`` (or ``contrastkit reproduce``)
runs a recipe's tier and writes results.csv, summary.csv and report.md. Names are imported on
first use, so listing recipes does not load torch.
"""

from __future__ import annotations

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
