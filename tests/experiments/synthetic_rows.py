"""Tidy rows of a made-up recipe whose values are known functions of the cell and seed."""

from __future__ import annotations

import itertools
from collections.abc import Callable

FIXED = ("loss", "batch_size", "temperature", "vrns")


def make_rows(grid: dict[str, list], seeds: int,
              metrics: dict[str, Callable[[dict, int], float]],
              fixed: dict | None = None) -> list[dict]:
    """One row per cell (the product of ``grid``) x seed x metric, as ``run_recipe`` returns
    them: the ten columns, then the other axes; ``metrics[name](axes, seed)`` is the value.
    ``fixed`` sets columns that are settings, not axes (e.g. ``{"loss": "simclr"}``)."""
    rows = []
    for values in itertools.product(*grid.values()):
        axes = dict(zip(grid, values, strict=True))
        cell = ",".join(f"{axis}={value}" for axis, value in axes.items())
        for seed in range(seeds):
            for metric, value in metrics.items():
                row = {"recipe": "test/recipe", "tier": "quick", "cell": cell,
                       **dict.fromkeys(FIXED), **(fixed or {}), **axes, "seed": seed,
                       "metric": metric, "value": float(value(axes, seed))}
                rows.append(row)
    return rows
