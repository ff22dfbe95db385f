"""The paper's claims, tested on the per-seed values of a reproduction.

A claim names a metric and a test; :func:`evaluate_claims` computes its :class:`Verdict`
(``supported``, ``not supported``, ``inconclusive`` or ``not converged``) from the tidy rows,
never from a value written by hand. The statistical tests are one-sided t-tests over seeds
(:mod:`contrastkit.experiments.stats`): the cells compared are matched on every axis the claim
does not name, and each seed's values are averaged over those axes. Each claim gets its own
one-sided p-value in the claimed direction (``p_value``) and in the opposite one; the report's
t-test claims are one family, and Holm's step-down adjustment across it gives ``p_adjusted``
(:func:`~contrastkit.experiments.claim_verdict.adjust_family`). A claim is *supported* if its
adjusted p-value is below the claim's ``alpha`` (default 0.05), *not supported* if its adjusted
opposite p-value is, else *inconclusive*.

- ``lower`` / ``higher``: ``treatment`` (axis values, e.g. ``{vrns: 30.0}``) against
  ``control``, a paired t-test of the per-seed differences; against a minimum effect stated
  before the runs where the claim gives one (``min_effect`` in the metric's units, or
  ``min_share``, a share of the control's value: "empties" is not "lowers a little";
  :func:`~contrastkit.experiments.stats.shifted_differences`). With ``for_each`` (an axis,
  or a list of axes: every combination of their levels) one paired test per level, and Holm's
  step-down adjustment across the ``m`` levels, separately for the claimed-direction and the
  opposite-direction p-values: the claim holds if every level's adjusted p-value is below
  alpha, fails if some level's adjusted opposite p-value is (the detail gives every level's
  raw and adjusted p-values; the weakest level, the one of the largest p-value, is reported
  with its adjusted p-value).
- ``decreasing`` / ``increasing`` ``along`` an axis, as the claim's ``trend`` says:
  ``monotone``, every adjacent step of the levels in the claimed direction (a paired test per
  step, Holm across the steps, as ``for_each``); ``end_to_end``, the last level against the
  first (one paired test), the detail naming every step that goes significantly against the
  claim (a U-shape shows).
- ``less_spread``: the per-seed standard deviation (``ddof=1``) of the metric ``across`` the
  levels of an axis, treatment against control, ``lower`` (paired).
- ``larger_gain``: the gain ``treatment - control`` at the smallest level ``along`` an axis
  against the gain at the largest level, ``higher`` (paired).
- ``close``: ``|metric - target| <= tolerance`` for every cell and seed; ``at_least`` /
  ``at_most``: ``metric >= target - tolerance`` / ``metric <= target + tolerance`` (tolerance
  0 unless given); ``target`` is a number or another metric's name. Exact claims are supported
  or not supported, never inconclusive, and are not in the family; their effect is the largest
  deviation (``close``), the smallest / largest ``metric - target`` (``at_least`` /
  ``at_most``).

Beside every *inconclusive* verdict of a t-test the :class:`Verdict` gives the minimum
detectable effect (``mde``): the smallest true mean difference that the one-sided test detects
with power 0.8 at alpha over the number of the report's t-test claims (and over the number of
levels or steps, for a claim over several): Holm's strictest threshold, given the observed
standard deviation of the differences and the number of seeds (exact, from the noncentral t
distribution: :func:`~contrastkit.experiments.stats.minimum_detectable_effect`).

*Not converged*: when the rows hold a metric named ``converged`` (1.0 or 0.0 per cell and
seed; pretraining recipes record it), a claim any of whose values comes from a cell and seed
that did not converge (``converged`` not 1, or not recorded for it) gets the verdict ``not
converged``, never supported, not supported or inconclusive; the values counted are exactly
those the test uses (the cells of its ``where``, its treatment and control, the matched cells
and the seeds they share). The detail names the cells and seeds, and the statistics are still
computed and shown, for information; runs whose record lacks what the convergence rule needs
(recorded under an earlier rule: :func:`~contrastkit.experiments.convergence.why_not`) are
counted and said so. Rows without a ``converged`` metric (the simulations) are judged as
they are.

Every claim may restrict the cells with ``where`` (axis values). A metric, axis or axis value
that is not in the rows is a ``ValueError`` naming it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.experiments.claim_specs import Claim, parse_claim
from contrastkit.experiments.claim_tests import (
    every_verdict,
    paired,
    paired_verdict,
    threshold_words,
    trend_verdict,
)
from contrastkit.experiments.claim_values import MetricValues, NotFinite, describe
from contrastkit.experiments.claim_verdict import Verdict, adjust_family, is_t_test
from contrastkit.experiments.convergence import INPUTS, LACKS, why_not
from contrastkit.experiments.stats import NOT_CONVERGED, NOT_SUPPORTED, SUPPORTED

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Recipe

__all__ = ["CONVERGED", "Verdict", "evaluate_claim", "evaluate_claims"]

#: The metric whose value (1.0 or 0.0 per cell and seed) says whether a run converged.
CONVERGED = "converged"


def _compare(claim: Claim, values: MetricValues, family: int) -> Verdict:
    """``lower`` / ``higher``, once or at every level of ``for_each`` (Holm across them)."""
    what = (f"{claim.metric} at {describe(claim.treatment)} {claim.test} than at "
            f"{describe(claim.control)}")
    if not claim.for_each:
        result = paired(claim, _matched_at(claim, values, {}), claim.test)
        return paired_verdict(claim, result, f"{what} ({describe(claim.where)}), averaged per "
                                             f"seed over the other axes{threshold_words(claim)}",
                              family)
    axes = claim.for_each
    levels = [dict(zip(axes, combination, strict=True))
              for combination in values.combinations(axes, claim.where)]
    results = [paired(claim, _matched_at(claim, values, level), claim.test)
               for level in levels]
    return every_verdict(claim, [describe(level) for level in levels], results,
                         f"{what} at every {' x '.join(axes)} ({describe(claim.where)})"
                         f"{threshold_words(claim)}", family)


def _matched_at(claim: Claim, values: MetricValues, level: Mapping) -> dict:
    """Seed -> (treatment, control) in the cells of ``where`` and ``level``."""
    where = {**claim.where, **level}
    return values.matched(claim.named, {**where, **claim.treatment},
                          {**where, **claim.control})


def _trend(claim: Claim, values: MetricValues, family: int) -> Verdict:
    """``decreasing`` / ``increasing``: monotone or end to end
    (:func:`.claim_tests.trend_verdict`)."""
    levels = _two_levels(values, claim.along, "along", dict(claim.where))
    return trend_verdict(claim, values, levels, family)


def _two_levels(values: MetricValues, axis: str | None, role: str, where: Mapping) -> list:
    assert axis is not None  # parse_claim requires the axis of the claim's test
    levels = values.levels(axis, role, where)
    if len(levels) < 2:
        raise ValueError(f"claim {values.claim_id!r}: {role} {axis!r} needs >= 2 levels, the "
                         f"results have {levels}")
    return levels


def _spread(claim: Claim, values: MetricValues, family: int) -> Verdict:
    """``less_spread``: the per-seed standard deviation across the levels of ``across``."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.across, "across", where)
    at_level = [_matched_at(claim, values, {claim.across: level}) for level in levels]
    seeds = sorted(set.intersection(*(set(pairs) for pairs in at_level)))
    spreads = {seed: tuple(float(np.std([pairs[seed][side] for pairs in at_level], ddof=1))
                           for side in (0, 1)) for seed in seeds}
    result = paired(claim, spreads, "lower", threshold=False)
    return paired_verdict(claim, result, f"the standard deviation of {claim.metric} across "
                                         f"{claim.across} in {levels}, "
                                         f"{describe(claim.treatment)} against "
                                         f"{describe(claim.control)} ({describe(where)})",
                          family)


def _gain(claim: Claim, values: MetricValues, family: int) -> Verdict:
    """``larger_gain``: the gain at the smallest level of ``along`` against the largest."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.along, "along", where)
    gains = [{seed: a - b for seed, (a, b) in _matched_at(claim, values, {claim.along: level})
              .items()} for level in (levels[0], levels[-1])]
    seeds = sorted(set(gains[0]) & set(gains[-1]))
    result = paired(claim, {seed: (gains[0][seed], gains[-1][seed]) for seed in seeds},
                    "higher", threshold=False)
    return paired_verdict(claim, result, f"the gain in {claim.metric} of "
                                         f"{describe(claim.treatment)} over "
                                         f"{describe(claim.control)} at {claim.along}="
                                         f"{levels[0]} against at {claim.along}={levels[-1]} "
                                         f"({describe(where)})", family)


# exact test -> (the reported gap of metric - target, whether it holds, what it is)
_EXACT: dict[str, tuple[Callable[[np.ndarray], Any], Callable[[float, float], bool], str]] = {
    "close": (lambda gaps: np.abs(gaps).max(), lambda gap, tolerance: gap <= tolerance,
              "largest |metric - target|"),
    "at_least": (np.min, lambda gap, tolerance: gap >= -tolerance, "smallest metric - target"),
    "at_most": (np.max, lambda gap, tolerance: gap <= tolerance, "largest metric - target"),
}


def _exact(claim: Claim, values: MetricValues, rows: Sequence[dict]) -> Verdict:
    """``close``, ``at_least``, ``at_most``: every cell and seed of ``where``."""
    target = _target(claim, rows)
    selected = values.select("where", claim.where)
    values.used.update((cell, seed) for cell, (_, seeds) in selected.items() for seed in seeds)
    gaps = np.array([value - target(cell, seed)
                     for cell, (_, seeds) in selected.items()
                     for seed, value in seeds.items()])
    reduce, holds, what = _EXACT[claim.test]
    effect = float(reduce(gaps))
    detail = (f"{claim.metric} {claim.test} {claim.target} (tolerance {claim.tolerance:g}) in "
              f"every cell and seed ({describe(claim.where)}); the {what} is {effect:.4g}")
    return Verdict(claim.id, claim.text, SUPPORTED if holds(effect, claim.tolerance)
                   else NOT_SUPPORTED, effect, math.nan, math.nan, int(gaps.size), detail)


def _target(claim: Claim, rows: Sequence[dict]) -> Callable[[str, Any], float]:
    """``(cell, seed) -> target value``: the number, or the named metric's value there."""
    if isinstance(claim.target, Real) and not isinstance(claim.target, bool):
        return lambda cell, seed: float(claim.target)
    if not isinstance(claim.target, str):
        raise ValueError(f"claim {claim.id!r}: target must be a number or a metric name, got "
                         f"{claim.target!r}")
    other = MetricValues(rows, claim.target, claim.id)

    def value(cell: str, seed: int) -> float:
        try:
            return other.cells[cell][1][seed]
        except KeyError:
            raise ValueError(f"claim {claim.id!r}: target {claim.target!r} has no value for "
                             f"cell {cell!r} seed {seed}") from None

    return value


def _check_names(claim: Claim, values: MetricValues) -> None:
    """Every axis and axis value the claim names is in the results (errors name them)."""
    for role in ("where", "treatment", "control"):
        values.select(role, getattr(claim, role))
    for role in ("along", "across"):
        if getattr(claim, role):
            values.levels(getattr(claim, role), role)
    for axis in claim.for_each:
        values.levels(axis, "for_each")


def _unconverged(rows: Sequence[dict], used: set) -> list[tuple[str, object, str]] | None:
    """The (cell, seed, why) among ``used`` that did not converge: ``converged`` is not 1
    there, or not recorded; ``None`` when the rows hold no ``converged`` metric."""
    converged = {(row["cell"], row["seed"]): row["value"] for row in rows
                 if row["metric"] == CONVERGED}
    if not converged:
        return None
    found = []
    for cell, seed in sorted(used, key=lambda pair: (pair[0], _seed_order(pair[1]))):
        value = converged.get((cell, seed))
        if value is None:
            found.append((cell, seed, "no converged record"))
        elif not (isinstance(value, Real) and float(value) == 1.0):
            found.append((cell, seed, f"converged = {value:g}" if isinstance(value, Real)
                          else f"converged = {value!r}"))
    return found


def _lacking(rows: Sequence[dict], runs: list[tuple[str, object, str]]) -> str:
    """`` (all of them: <why>)`` or `` (k of them: <why>)`` for the ``runs`` whose record
    lacks what the convergence rule needs (:func:`.convergence.why_not`), else empty."""
    inputs: dict[tuple, dict] = {}
    for row in rows:
        if row["metric"] in INPUTS:
            inputs.setdefault((row["cell"], row["seed"]), {})[row["metric"]] = row["value"]
    lacking = sum(why_not(inputs.get((cell, seed), {})) is not None for cell, seed, _ in runs)
    if not lacking:
        return ""
    return f" ({'all' if lacking == len(runs) else lacking} of them: {LACKS})"


def _seed_order(seed: object) -> tuple:
    """Seeds in numeric order (then any that are not numbers, by their text)."""
    return (0, seed, "") if isinstance(seed, Real) else (1, 0, str(seed))


def _name_runs(runs: list[tuple[str, object, str]]) -> str:
    """``cell (seeds 0, 2: converged = 0); other (seed 1: no converged record)``."""
    grouped: dict[tuple[str, str], list] = {}
    for cell, seed, why in runs:
        grouped.setdefault((cell, why), []).append(seed)
    return "; ".join(f"{cell} (seed{'s' if len(seeds) > 1 else ''} "
                     f"{', '.join(map(str, seeds))}: {why})"
                     for (cell, why), seeds in grouped.items())


def evaluate_claims(recipe: Recipe, rows: Sequence[dict]) -> list[Verdict]:
    """The :class:`Verdict` of every claim of ``recipe.claims`` (mappings, or objects with the
    claim keys as attributes) on the tidy ``rows``, in the recipe's order, judged with Holm's
    adjustment across the recipe's t-test claims (:func:`.claim_verdict.adjust_family`)."""
    claims = [parse_claim(spec) for spec in (getattr(recipe, "claims", None) or [])]
    family = max(sum(is_t_test(claim.test) for claim in claims), 1)
    verdicts = [_evaluate(claim, rows, family) for claim in claims]
    return adjust_family(verdicts, [claim.test for claim in claims])


def evaluate_claim(spec: object, rows: Sequence[dict]) -> Verdict:
    """The :class:`Verdict` of one claim spec on the tidy ``rows`` (see the module's text), a
    family of one."""
    claim = parse_claim(spec)
    return adjust_family([_evaluate(claim, rows, 1)], [claim.test])[0]


def _evaluate(claim: Claim, rows: Sequence[dict], family: int) -> Verdict:
    """The claim's own verdict, before the report's adjustment (``family``: the number of
    t-test claims of the report, for the minimum detectable effect)."""
    values = MetricValues(rows, claim.metric, claim.id)
    _check_names(claim, values)
    try:
        verdict = _judge(claim, values, rows, family)
    except NotFinite as error:
        unconverged = _unconverged(rows, values.used)
        if not unconverged:
            raise ValueError(str(error)) from None
        return Verdict(claim.id, claim.text, NOT_CONVERGED, math.nan, math.nan, math.nan, 0,
                       f"not converged: {_name_runs(unconverged)}"
                       f"{_lacking(rows, unconverged)}; the statistics could not "
                       f"be computed: {str(error).split(': ', 1)[1]}", alpha=claim.alpha)
    unconverged = _unconverged(rows, values.used)
    if not unconverged:
        return verdict
    runs = len(values.used)
    return dataclasses.replace(
        verdict, verdict=NOT_CONVERGED,
        detail=(f"not converged: {len(unconverged)} of the {runs} cell x seed runs this test "
                f"uses did not converge: {_name_runs(unconverged)}"
                f"{_lacking(rows, unconverged)}; for information, the "
                f"claim's own test on these values (before the report's adjustment) reads "
                f"{verdict.verdict}: {verdict.detail}"))


def _judge(claim: Claim, values: MetricValues, rows: Sequence[dict], family: int) -> Verdict:
    """The claim's test on its values."""
    if not is_t_test(claim.test):
        return _exact(claim, values, rows)
    test = {"lower": _compare, "higher": _compare, "decreasing": _trend, "increasing": _trend,
            "less_spread": _spread, "larger_gain": _gain}[claim.test]
    return test(claim, values, family)
