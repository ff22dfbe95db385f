"""The paper's claims, tested on the per-seed values of a reproduction.

A claim names a metric and a test; :func:`evaluate_claims` computes its :class:`Verdict`
(``supported``, ``not supported`` or ``inconclusive``) from the tidy rows, never from a value
written by hand. The statistical tests are paired over seeds: the cells compared are matched on
every axis the claim does not name, and each seed's values are averaged over those axes.

- ``lower`` / ``higher``: ``treatment`` (axis values, e.g. ``{vrns: 30.0}``) against
  ``control``; with ``for_each: AXIS`` one test per level of the axis: supported if supported
  at every level, not supported if contradicted at any, else inconclusive (the level with the
  largest p-value is reported).
- ``decreasing`` / ``increasing`` ``along`` an axis: the largest level against the smallest
  (the detail gives Spearman's rho of the level means).
- ``less_spread``: the per-seed standard deviation (``ddof=1``) of the metric ``across`` the
  levels of an axis, treatment against control, ``lower``.
- ``larger_gain``: the gain ``treatment - control`` at the smallest level ``along`` an axis
  against the gain at the largest level, ``higher``.
- ``close``: ``|metric - target| <= tolerance`` for every cell and seed; ``at_least`` /
  ``at_most``: ``metric >= target - tolerance`` / ``metric <= target + tolerance`` (tolerance
  0 unless given); ``target`` is a number or another metric's name. Exact claims are supported
  or not supported, never inconclusive; their effect is the largest deviation (``close``), the
  smallest / largest ``metric - target`` (``at_least`` / ``at_most``).

Every claim may restrict the cells with ``where`` (axis values). A metric, axis or axis value
that is not in the rows is a ``ValueError`` naming it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np
from scipy import stats

from contrastkit.experiments.claim_specs import Claim, parse_claim
from contrastkit.experiments.results import cell_axes, same_level
from contrastkit.experiments.stats import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    PairedTest,
    paired_test,
)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of one claim: ``effect`` is the mean paired difference (or the deviation of
    an exact claim), ``effect_size`` Cohen's d_z (NaN for exact claims), ``p_value`` the
    one-sided p-value in the claimed direction (NaN for exact claims), ``n`` the number of
    seeds paired (values compared, for exact claims), ``detail`` what was compared."""

    claim_id: str
    text: str
    verdict: str
    effect: float
    effect_size: float
    p_value: float
    n: int
    detail: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Values:
    """One metric's values in the rows: for every cell, its axis values and seed -> value."""

    def __init__(self, rows: Sequence[dict], metric: str, claim_id: str):
        self.claim_id = claim_id
        self.axes = cell_axes(rows)
        self.cells: dict[str, tuple[dict, dict]] = {}
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

    def matched(self, named: set, a: Mapping, b: Mapping) -> dict[int, tuple[float, float]]:
        """Seed -> (mean over the cells of ``a``, mean over their matches in ``b``): cells are
        matched on every axis not in ``named``; seeds are those every matched cell has."""
        def by_rest(cells):
            return {tuple(axes[x] for x in self.axes if x not in named): seeds
                    for axes, seeds in cells.values()}

        cells_a, cells_b = by_rest(self.select("treatment", a)), by_rest(self.select("control",
                                                                                      b))
        pairs = [(cells_a[key], cells_b[key]) for key in cells_a if key in cells_b]
        if not pairs:
            raise ValueError(f"claim {self.claim_id!r}: no cell of {_describe(a)} has a cell of "
                             f"{_describe(b)} with the same other axes")
        seeds = sorted(set.intersection(*(set(x) & set(y) for x, y in pairs)))
        return {seed: (float(np.mean([x[seed] for x, _ in pairs])),
                       float(np.mean([y[seed] for _, y in pairs]))) for seed in seeds}


def _describe(where: Mapping) -> str:
    return ", ".join(f"{axis}={value}" for axis, value in where.items()) or "all cells"


def _paired(claim: Claim, pairs: dict[int, tuple[float, float]], direction: str) -> PairedTest:
    return paired_test([a for a, _ in pairs.values()], [b for _, b in pairs.values()],
                       direction, claim.alpha)


def _verdict(claim: Claim, result: PairedTest, detail: str) -> Verdict:
    if result.n < 2:
        detail += f"; needs >= 2 seeds, the results have {result.n}"
    else:
        detail += (f"; mean difference {result.mean_difference:.4g}, d_z "
                   f"{result.effect_size:.3g}, one-sided p {result.p_value:.3g}, {result.n} seeds")
    return Verdict(claim.id, claim.text, result.verdict, result.mean_difference,
                   result.effect_size, result.p_value, result.n, detail)


def _compare(claim: Claim, values: _Values) -> Verdict:
    """``lower`` / ``higher``, once or at every level of ``for_each``."""
    what = (f"{claim.metric} at {_describe(claim.treatment)} {claim.test} than at "
            f"{_describe(claim.control)}")
    if claim.for_each is None:
        result = _paired(claim, _matched_at(claim, values, {}), claim.test)
        return _verdict(claim, result, f"{what} ({_describe(claim.where)}), averaged per seed "
                                       "over the other axes")
    levels = values.levels(claim.for_each, "for_each", claim.where)
    results = {level: _paired(claim, _matched_at(claim, values, {claim.for_each: level}),
                              claim.test) for level in levels}
    verdicts = {result.verdict for result in results.values()}
    verdict = (SUPPORTED if verdicts == {SUPPORTED} else
               NOT_SUPPORTED if NOT_SUPPORTED in verdicts else INCONCLUSIVE)
    worst = max(results, key=lambda level: _nan_last(results[level].p_value))
    each = "; ".join(f"{claim.for_each}={level}: {result.verdict}, p {result.p_value:.3g}"
                     for level, result in results.items())
    result = results[worst]._replace(verdict=verdict,
                                     n=min(result.n for result in results.values()))
    return _verdict(claim, result, f"{what} at every {claim.for_each} ({each}); the weakest "
                                   f"level, {claim.for_each}={worst}, is reported")


def _matched_at(claim: Claim, values: _Values, level: Mapping) -> dict:
    """Seed -> (treatment, control) in the cells of ``where`` and ``level``."""
    where = {**claim.where, **level}
    return values.matched(claim.named, {**where, **claim.treatment},
                          {**where, **claim.control})


def _nan_last(p_value: float) -> float:
    return math.inf if math.isnan(p_value) else p_value


def _trend(claim: Claim, values: _Values) -> Verdict:
    """``decreasing`` / ``increasing``: the largest level of ``along`` against the smallest."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.along, "along", where)
    pairs = values.matched(claim.named, {**where, claim.along: levels[-1]},
                           {**where, claim.along: levels[0]})
    result = _paired(claim, pairs, "lower" if claim.test == "decreasing" else "higher")
    rho = _spearman(levels, [_mean_at(values, {**where, claim.along: level})
                             for level in levels])
    return _verdict(claim, result, f"{claim.metric} at {claim.along}={levels[-1]} against "
                                   f"{claim.along}={levels[0]} ({_describe(where)}); Spearman's "
                                   f"rho of the {len(levels)} level means {rho:.3g}")


def _two_levels(values: _Values, axis: str, role: str, where: Mapping) -> list:
    levels = values.levels(axis, role, where)
    if len(levels) < 2:
        raise ValueError(f"claim {values.claim_id!r}: {role} {axis!r} needs >= 2 levels, the "
                         f"results have {levels}")
    return levels


def _mean_at(values: _Values, where: Mapping) -> float:
    return float(np.mean([value for _, seeds in values.select("where", where).values()
                          for value in seeds.values()]))


def _spearman(levels: list, means: list[float]) -> float:
    """Spearman's rho of the level means against the levels; NaN when the means are equal."""
    if np.ptp(means) == 0:
        return math.nan
    return float(stats.spearmanr(range(len(levels)), means).statistic)


def _spread(claim: Claim, values: _Values) -> Verdict:
    """``less_spread``: the per-seed standard deviation across the levels of ``across``."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.across, "across", where)
    at_level = [_matched_at(claim, values, {claim.across: level}) for level in levels]
    seeds = sorted(set.intersection(*(set(pairs) for pairs in at_level)))
    spreads = {seed: tuple(float(np.std([pairs[seed][side] for pairs in at_level], ddof=1))
                           for side in (0, 1)) for seed in seeds}
    result = _paired(claim, spreads, "lower")
    return _verdict(claim, result, f"the standard deviation of {claim.metric} across "
                                   f"{claim.across} in {levels}, {_describe(claim.treatment)} "
                                   f"against {_describe(claim.control)} ({_describe(where)})")


def _gain(claim: Claim, values: _Values) -> Verdict:
    """``larger_gain``: the gain at the smallest level of ``along`` against the largest."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.along, "along", where)
    gains = [{seed: a - b for seed, (a, b) in _matched_at(claim, values, {claim.along: level})
              .items()} for level in levels]
    seeds = sorted(set(gains[0]) & set(gains[-1]))
    result = _paired(claim, {seed: (gains[0][seed], gains[-1][seed]) for seed in seeds},
                     "higher")
    return _verdict(claim, result, f"the gain in {claim.metric} of {_describe(claim.treatment)} "
                                   f"over {_describe(claim.control)} at {claim.along}="
                                   f"{levels[0]} against at {claim.along}={levels[-1]} "
                                   f"({_describe(where)})")


# exact test -> (the reported gap of metric - target, whether it holds, what it is)
_EXACT = {
    "close": (lambda gaps: np.abs(gaps).max(), lambda gap, tolerance: gap <= tolerance,
              "largest |metric - target|"),
    "at_least": (np.min, lambda gap, tolerance: gap >= -tolerance, "smallest metric - target"),
    "at_most": (np.max, lambda gap, tolerance: gap <= tolerance, "largest metric - target"),
}


def _exact(claim: Claim, values: _Values, rows: Sequence[dict]) -> Verdict:
    """``close``, ``at_least``, ``at_most``: every cell and seed of ``where``."""
    target = _target(claim, rows)
    gaps = np.array([value - target(cell, seed)
                     for cell, (_, seeds) in values.select("where", claim.where).items()
                     for seed, value in seeds.items()])
    reduce, holds, what = _EXACT[claim.test]
    effect = float(reduce(gaps))
    detail = (f"{claim.metric} {claim.test} {claim.target} (tolerance {claim.tolerance:g}) in "
              f"every cell and seed ({_describe(claim.where)}); the {what} is {effect:.4g}")
    return Verdict(claim.id, claim.text, SUPPORTED if holds(effect, claim.tolerance)
                   else NOT_SUPPORTED, effect, math.nan, math.nan, int(gaps.size), detail)


def _target(claim: Claim, rows: Sequence[dict]):
    """``(cell, seed) -> target value``: the number, or the named metric's value there."""
    if isinstance(claim.target, Real) and not isinstance(claim.target, bool):
        return lambda cell, seed: float(claim.target)
    if not isinstance(claim.target, str):
        raise ValueError(f"claim {claim.id!r}: target must be a number or a metric name, got "
                         f"{claim.target!r}")
    other = _Values(rows, claim.target, claim.id)

    def value(cell: str, seed: int) -> float:
        try:
            return other.cells[cell][1][seed]
        except KeyError:
            raise ValueError(f"claim {claim.id!r}: target {claim.target!r} has no value for "
                             f"cell {cell!r} seed {seed}") from None

    return value


def _check_names(claim: Claim, values: _Values) -> None:
    """Every axis and axis value the claim names is in the results (errors name them)."""
    for role in ("where", "treatment", "control"):
        values.select(role, getattr(claim, role))
    for role in ("along", "across", "for_each"):
        if getattr(claim, role):
            values.levels(getattr(claim, role), role)


def evaluate_claims(recipe, rows: Sequence[dict]) -> list[Verdict]:
    """The :class:`Verdict` of every claim of ``recipe.claims`` (mappings, or objects with the
    claim keys as attributes) on the tidy ``rows``, in the recipe's order."""
    return [evaluate_claim(spec, rows) for spec in (getattr(recipe, "claims", None) or [])]


def evaluate_claim(spec, rows: Sequence[dict]) -> Verdict:
    """The :class:`Verdict` of one claim spec on the tidy ``rows`` (see the module's text)."""
    claim = parse_claim(spec)
    values = _Values(rows, claim.metric, claim.id)
    _check_names(claim, values)
    if claim.test in ("close", "at_least", "at_most"):
        return _exact(claim, values, rows)
    test = {"lower": _compare, "higher": _compare, "decreasing": _trend, "increasing": _trend,
            "less_spread": _spread, "larger_gain": _gain}[claim.test]
    return test(claim, values)
