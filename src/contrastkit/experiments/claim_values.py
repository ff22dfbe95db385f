"""One metric's per-seed values in a reproduction's tidy rows, as the claims read them: the
cells by their axis values, the levels of an axis, and cells matched across groups on every
axis a claim does not name (:class:`MetricValues`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from contrastkit.experiments.results import cell_axes, same_level


class NotFinite(ValueError):
    """A value the test uses is NaN or infinite (a run that diverged may leave one)."""


class MetricValues:
    """One metric's values in the rows: for every cell, its axis values and seed -> value;
    ``used`` collects the (cell, seed) whose values the claim's test has read."""

    def __init__(self, rows: Sequence[dict], metric: str, claim_id: str):
        self.claim_id = claim_id
        self.metric = metric
        self.axes = cell_axes(rows)
        self.cells: dict[str, tuple[dict, dict]] = {}
        self.used: set[tuple[str, object]] = set()
        for row in rows:
            if row["metric"] == metric:
                axes = {axis: row.get(axis) for axis in self.axes}
                self.cells.setdefault(row["cell"], (axes, {}))[1][row["seed"]] = row["value"]
        if not self.cells:
            metrics = sorted({row["metric"] for row in rows})
            raise ValueError(f"claim {claim_id!r}: metric {metric!r} is not in the results; "
                             f"metrics: {', '.join(metrics)}")

    def select(self, role: str, where: Mapping) -> dict[str, tuple[dict, dict]]:
        """The cells whose axes take the values of ``where`` (``role`` names it in errors)."""
        for axis, value in where.items():
            levels = self.levels(axis, role)
            if not any(same_level(value, level) for level in levels):
                raise ValueError(f"claim {self.claim_id!r}: {role} {axis}={value!r} matches no "
                                 f"cell; {axis} takes {', '.join(map(repr, levels))}")
        return {cell: entry for cell, entry in self.cells.items()
                if all(same_level(entry[0][axis], value) for axis, value in where.items())}

    def levels(self, axis: str, role: str, where: Mapping | None = None) -> list:
        """The sorted values that ``axis`` takes (in the cells of ``where``)."""
        if axis not in self.axes:
            raise ValueError(f"claim {self.claim_id!r}: {role} names {axis!r}, not an axis of "
                             f"the results; axes: {', '.join(self.axes) or 'none'}")
        cells = self.select("where", where) if where else self.cells
        return sorted({entry[0][axis] for entry in cells.values()})

    def combinations(self, axes: Sequence[str], where: Mapping) -> list[tuple]:
        """The sorted combinations of the levels of ``axes`` that the cells of ``where``
        hold."""
        for axis in axes:
            self.levels(axis, "for_each")
        return sorted({tuple(entry[0][axis] for axis in axes)
                       for entry in self.select("where", where).values()})

    def aligned(self, named: set, groups: Sequence[Mapping], roles: Sequence[str]
                ) -> dict[object, list[float]]:
        """Seed -> [the mean over the cells of each group]: the cells of the groups are
        matched on every axis not in ``named`` (a match must exist in every group); the seeds
        are those every matched cell has. The (cell, seed) read are added to ``used``."""
        def by_rest(cells):
            return {tuple(axes[x] for x in self.axes if x not in named): (cell, seeds)
                    for cell, (axes, seeds) in cells.items()}

        keyed = [by_rest(self.select(role, group)) for role, group in zip(roles, groups,
                                                                           strict=True)]
        keys = [key for key in keyed[0] if all(key in other for other in keyed[1:])]
        if not keys:
            if len(groups) == 2:
                raise ValueError(f"claim {self.claim_id!r}: no cell of {describe(groups[0])} "
                                 f"has a cell of {describe(groups[1])} with the same other "
                                 f"axes")
            raise ValueError(f"claim {self.claim_id!r}: the cells of "
                             f"{'; '.join(map(describe, groups))} share no other axes")
        matched = [group[key] for group in keyed for key in keys]
        seeds = sorted(set.intersection(*(set(seeds) for _, seeds in matched)))
        self.used.update((cell, seed) for cell, _ in matched for seed in seeds)
        bad = [f"{cell} seed {seed}" for cell, values in matched for seed in seeds
               if not math.isfinite(values[seed])]
        if bad:
            raise NotFinite(f"claim {self.claim_id!r}: {self.metric} is not finite in "
                             f"{', '.join(bad)}")
        return {seed: [float(np.mean([group[key][1][seed] for key in keys]))
                       for group in keyed] for seed in seeds}

    def matched(self, named: set, a: Mapping, b: Mapping) -> dict[object, tuple[float, float]]:
        """Seed -> (mean over the cells of ``a``, mean over their matches in ``b``): cells are
        matched on every axis not in ``named``; seeds are those every matched cell has."""
        return {seed: (x, y) for seed, (x, y) in
                self.aligned(named, [a, b], ["treatment", "control"]).items()}


def describe(where: Mapping) -> str:
    """``batch_size=16, vrns=30.0`` (``all cells`` for an empty selection)."""
    return ", ".join(f"{axis}={value}" for axis, value in where.items()) or "all cells"
