"""The paper's claims, tested on the per-seed values of a reproduction.

A claim names a metric and a test; :func:`evaluate_claims` computes its :class:`Verdict`
(``supported``, ``not supported``, ``inconclusive`` or ``not converged``) from the tidy rows,
never from a value written by hand. The statistical tests are one-sided t-tests over seeds
(:mod:`contrastkit.experiments.stats`): the cells compared are matched on every axis the claim
does not name, and each seed's values are averaged over those axes. A test is *supported* if
its p-value in the claimed direction is below the claim's ``alpha`` (default 0.05), *not
supported* if the p-value in the opposite direction is, else *inconclusive*.

- ``lower`` / ``higher``: ``treatment`` (axis values, e.g. ``{vrns: 30.0}``) against
  ``control``, a paired t-test of the per-seed differences. With ``for_each`` (an axis, or a
  list of axes: every combination of their levels) one paired test per level, and Holm's
  step-down adjustment across the ``m`` levels, separately for the claimed-direction and the
  opposite-direction p-values: supported if every level's adjusted p-value is below alpha,
  not supported if some level's adjusted opposite p-value is, else inconclusive (the detail
  gives every level's raw and adjusted p-values; the weakest level, the one of the largest
  p-value, is reported with its adjusted p-value).
- ``decreasing`` / ``increasing`` ``along`` an axis: for each seed, the least-squares slope of
  the metric (averaged over the other axes) against the *rank* of the level (0, 1, ...,
  L - 1: the levels are evenly spaced by rank, whatever their values), then a one-sided
  one-sample t-test of the per-seed slopes against 0; the effect is the mean slope per rank
  step, and the detail gives Spearman's rho of the level means as a description.
- ``less_spread``: the per-seed standard deviation (``ddof=1``) of the metric ``across`` the
  levels of an axis, treatment against control, ``lower`` (paired).
- ``larger_gain``: the gain ``treatment - control`` at the smallest level ``along`` an axis
  against the gain at the largest level, ``higher`` (paired).
- ``close``: ``|metric - target| <= tolerance`` for every cell and seed; ``at_least`` /
  ``at_most``: ``metric >= target - tolerance`` / ``metric <= target + tolerance`` (tolerance
  0 unless given); ``target`` is a number or another metric's name. Exact claims are supported
  or not supported, never inconclusive; their effect is the largest deviation (``close``), the
  smallest / largest ``metric - target`` (``at_least`` / ``at_most``).

Beside every *inconclusive* verdict of a t-test the :class:`Verdict` gives the minimum
detectable effect (``mde``): the smallest true mean difference (mean slope, for a trend) that
the one-sided test at the claim's alpha detects with power 0.8, given the observed standard
deviation of the differences and the number of seeds (exact, from the noncentral t
distribution: :func:`~contrastkit.experiments.stats.minimum_detectable_effect`). For a
``for_each`` claim it is the largest over the levels of each level's value at ``alpha / m``
(Bonferroni's level, the strictest that Holm's procedure applies; an effect that size at every
level passes it with power 0.8 at each level).

*Not converged*: when the rows hold a metric named ``converged`` (1.0 or 0.0 per cell and
seed; pretraining recipes record it), a claim any of whose values comes from a cell and seed
that did not converge (``converged`` not 1, or not recorded for it) gets the verdict ``not
converged``, never supported, not supported or inconclusive; the values counted are exactly
those the test uses (the cells of its ``where``, its treatment and control, the matched cells
and the seeds they share). The detail names the cells and seeds, and the statistics are still
computed and shown, for information. Rows without a ``converged`` metric (the simulations)
are judged as they are.

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
from contrastkit.experiments.claim_values import MetricValues, NotFinite, describe
from contrastkit.experiments.stats import (
    INCONCLUSIVE,
    NOT_CONVERGED,
    NOT_SUPPORTED,
    POWER,
    SUPPORTED,
    OneSampleTest,
    holm_adjust,
    minimum_detectable_effect,
    one_sample_test,
    rank_slopes,
)

#: The metric whose value (1.0 or 0.0 per cell and seed) says whether a run converged.
CONVERGED = "converged"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of one claim: ``effect`` is the mean paired difference (the mean slope per
    rank step of a trend, the deviation of an exact claim), ``effect_size`` Cohen's d_z (NaN
    for exact claims), ``p_value`` the one-sided p-value in the claimed direction (Holm-adjusted
    for ``for_each``; NaN for exact claims), ``n`` the number of seeds paired (values compared,
    for exact claims), ``detail`` what was compared, ``mde`` the minimum detectable effect
    beside an inconclusive t-test (NaN where it does not apply; see the module's text)."""

    claim_id: str
    text: str
    verdict: str
    effect: float
    effect_size: float
    p_value: float
    n: int
    detail: str
    mde: float = math.nan

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _paired(claim: Claim, pairs: dict[object, tuple[float, float]], direction: str
            ) -> OneSampleTest:
    """The one-sided paired t-test of the pairs (``stats.paired_test``'s, with the opposite
    p-value and the differences' standard deviation)."""
    both = np.array(list(pairs.values()), dtype=np.float64).reshape(-1, 2)
    scale = float(np.abs(both).max()) if both.size else 0.0
    return one_sample_test(both[:, 0] - both[:, 1], direction, claim.alpha, scale=scale)


def _mde_words(claim: Claim, result: OneSampleTest, mde: float, noun: str) -> str:
    return (f"; the minimum detectable effect is {mde:.3g}: the true {noun} that this "
            f"one-sided test at alpha {claim.alpha:g} detects with power {POWER:g}, given the "
            f"standard deviation {result.std:.3g} of the per-seed values and {result.n} seeds")


def _verdict(claim: Claim, result: OneSampleTest, detail: str,
             noun: str = "mean difference") -> Verdict:
    """The verdict of one t-test; the minimum detectable effect beside an inconclusive one."""
    mde = math.nan
    if result.n < 2:
        detail += f"; needs >= 2 seeds, the results have {result.n}"
    else:
        detail += (f"; {noun} {result.mean:.4g}, d_z {result.effect_size:.3g}, one-sided p "
                   f"{result.p_value:.3g}, {result.n} seeds")
        if result.verdict == INCONCLUSIVE:
            mde = minimum_detectable_effect(result.std, result.n, claim.alpha)
            detail += _mde_words(claim, result, mde, noun)
    return Verdict(claim.id, claim.text, result.verdict, result.mean, result.effect_size,
                   result.p_value, result.n, detail, mde)


def _compare(claim: Claim, values: MetricValues) -> Verdict:
    """``lower`` / ``higher``, once or at every level of ``for_each`` (Holm across them)."""
    what = (f"{claim.metric} at {describe(claim.treatment)} {claim.test} than at "
            f"{describe(claim.control)}")
    if not claim.for_each:
        result = _paired(claim, _matched_at(claim, values, {}), claim.test)
        return _verdict(claim, result, f"{what} ({describe(claim.where)}), averaged per seed "
                                       "over the other axes")
    axes = claim.for_each
    levels = [dict(zip(axes, combination, strict=True))
              for combination in values.combinations(axes, claim.where)]
    results = [_paired(claim, _matched_at(claim, values, level), claim.test)
               for level in levels]
    m = len(results)
    claimed = holm_adjust([_or_one(result.p_value) for result in results])
    opposite = holm_adjust([_or_one(result.p_opposite) for result in results])
    verdict = (SUPPORTED if (claimed < claim.alpha).all() else
               NOT_SUPPORTED if (opposite < claim.alpha).any() else INCONCLUSIVE)
    weakest = max(range(m), key=lambda index: _nan_last(results[index].p_value))
    worst = results[weakest]
    n = min(result.n for result in results)
    each = "; ".join(
        f"{describe(level)}: {claim.test} {result.verdict} alone, mean difference "
        f"{result.mean:.4g}, p {result.p_value:.3g}, Holm p {p:.3g}, Holm opposite p {q:.3g}"
        for level, result, p, q in zip(levels, results, claimed, opposite, strict=True))
    named = " x ".join(axes)
    detail = (f"{what} at every {named} ({describe(claim.where)}): {m} paired tests, "
              f"Holm's step-down adjustment across them, for the claimed and for the opposite "
              f"direction ({each}); the weakest level, {describe(levels[weakest])}, is "
              f"reported with its Holm-adjusted p")
    p_value = math.nan if math.isnan(worst.p_value) else float(claimed[weakest])
    mde = math.nan
    if n < 2:
        detail += f"; needs >= 2 seeds at every level, the results have {n}"
    else:
        detail += (f"; mean difference {worst.mean:.4g}, d_z {worst.effect_size:.3g}, "
                   f"Holm-adjusted one-sided p {p_value:.3g}, {n} seeds")
        if verdict == INCONCLUSIVE:
            each_mde = [minimum_detectable_effect(result.std, result.n, claim.alpha / m)
                        for result in results]
            largest = max(range(m), key=lambda index: each_mde[index])
            mde = each_mde[largest]
            detail += (f"; the minimum detectable effect is {mde:.3g}: the largest over the "
                       f"{m} levels (at {describe(levels[largest])}, standard deviation "
                       f"{results[largest].std:.3g} of its differences, "
                       f"{results[largest].n} seeds) of the true mean difference that a "
                       f"level's one-sided test at alpha / {m} = {claim.alpha / m:.3g} (Holm's "
                       f"strictest threshold) detects with power {POWER:g}")
    return Verdict(claim.id, claim.text, verdict, worst.mean, worst.effect_size, p_value, n,
                   detail, mde)


def _or_one(p_value: float) -> float:
    """A level without a p-value (fewer than 2 seeds) counts as p = 1: never rejected."""
    return 1.0 if math.isnan(p_value) else p_value


def _matched_at(claim: Claim, values: MetricValues, level: Mapping) -> dict:
    """Seed -> (treatment, control) in the cells of ``where`` and ``level``."""
    where = {**claim.where, **level}
    return values.matched(claim.named, {**where, **claim.treatment},
                          {**where, **claim.control})


def _nan_last(p_value: float) -> float:
    return math.inf if math.isnan(p_value) else p_value


def _trend(claim: Claim, values: MetricValues) -> Verdict:
    """``decreasing`` / ``increasing``: a one-sample t-test of the per-seed slopes against
    the rank of the levels of ``along``."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.along, "along", where)
    per_seed = values.aligned(claim.named, [{**where, claim.along: level} for level in levels],
                              ["along"] * len(levels))
    table = np.array(list(per_seed.values()), dtype=np.float64).reshape(-1, len(levels))
    slopes = rank_slopes(table) if len(table) else np.empty(0)
    scale = float(np.abs(table).max()) if table.size else 0.0
    result = one_sample_test(slopes, "lower" if claim.test == "decreasing" else "higher",
                             claim.alpha, scale=scale)
    rho = _spearman(levels, table.mean(axis=0).tolist()) if len(table) else math.nan
    return _verdict(claim, result, f"the least-squares slope of {claim.metric} against the "
                                   f"rank of {claim.along} (0 to {len(levels) - 1} for "
                                   f"{levels}: evenly spaced by rank, not by value), per seed, "
                                   f"averaged over the other axes ({describe(where)}); a "
                                   f"one-sided one-sample t-test of the slopes against 0; "
                                   f"Spearman's rho of the {len(levels)} level means "
                                   f"{rho:.3g}", noun="mean slope per rank step")


def _two_levels(values: MetricValues, axis: str, role: str, where: Mapping) -> list:
    levels = values.levels(axis, role, where)
    if len(levels) < 2:
        raise ValueError(f"claim {values.claim_id!r}: {role} {axis!r} needs >= 2 levels, the "
                         f"results have {levels}")
    return levels


def _spearman(levels: list, means: list[float]) -> float:
    """Spearman's rho of the level means against the levels; NaN when the means are equal."""
    if np.ptp(means) == 0:
        return math.nan
    return float(stats.spearmanr(range(len(levels)), means).statistic)


def _spread(claim: Claim, values: MetricValues) -> Verdict:
    """``less_spread``: the per-seed standard deviation across the levels of ``across``."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.across, "across", where)
    at_level = [_matched_at(claim, values, {claim.across: level}) for level in levels]
    seeds = sorted(set.intersection(*(set(pairs) for pairs in at_level)))
    spreads = {seed: tuple(float(np.std([pairs[seed][side] for pairs in at_level], ddof=1))
                           for side in (0, 1)) for seed in seeds}
    result = _paired(claim, spreads, "lower")
    return _verdict(claim, result, f"the standard deviation of {claim.metric} across "
                                   f"{claim.across} in {levels}, {describe(claim.treatment)} "
                                   f"against {describe(claim.control)} ({describe(where)})")


def _gain(claim: Claim, values: MetricValues) -> Verdict:
    """``larger_gain``: the gain at the smallest level of ``along`` against the largest."""
    where = dict(claim.where)
    levels = _two_levels(values, claim.along, "along", where)
    gains = [{seed: a - b for seed, (a, b) in _matched_at(claim, values, {claim.along: level})
              .items()} for level in (levels[0], levels[-1])]
    seeds = sorted(set(gains[0]) & set(gains[-1]))
    result = _paired(claim, {seed: (gains[0][seed], gains[-1][seed]) for seed in seeds},
                     "higher")
    return _verdict(claim, result, f"the gain in {claim.metric} of {describe(claim.treatment)} "
                                   f"over {describe(claim.control)} at {claim.along}="
                                   f"{levels[0]} against at {claim.along}={levels[-1]} "
                                   f"({describe(where)})")


# exact test -> (the reported gap of metric - target, whether it holds, what it is)
_EXACT = {
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


def _target(claim: Claim, rows: Sequence[dict]):
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


def _seed_order(seed) -> tuple:
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


def evaluate_claims(recipe, rows: Sequence[dict]) -> list[Verdict]:
    """The :class:`Verdict` of every claim of ``recipe.claims`` (mappings, or objects with the
    claim keys as attributes) on the tidy ``rows``, in the recipe's order."""
    return [evaluate_claim(spec, rows) for spec in (getattr(recipe, "claims", None) or [])]


def evaluate_claim(spec, rows: Sequence[dict]) -> Verdict:
    """The :class:`Verdict` of one claim spec on the tidy ``rows`` (see the module's text)."""
    claim = parse_claim(spec)
    values = MetricValues(rows, claim.metric, claim.id)
    _check_names(claim, values)
    try:
        verdict = _judge(claim, values, rows)
    except NotFinite as error:
        unconverged = _unconverged(rows, values.used)
        if not unconverged:
            raise ValueError(str(error)) from None
        return Verdict(claim.id, claim.text, NOT_CONVERGED, math.nan, math.nan, math.nan, 0,
                       f"not converged: {_name_runs(unconverged)}; the statistics could not "
                       f"be computed: {str(error).split(': ', 1)[1]}")
    unconverged = _unconverged(rows, values.used)
    if not unconverged:
        return verdict
    runs = len(values.used)
    return dataclasses.replace(
        verdict, verdict=NOT_CONVERGED,
        detail=(f"not converged: {len(unconverged)} of the {runs} cell x seed runs this test "
                f"uses did not converge: {_name_runs(unconverged)}; for information, the test "
                f"on these values reads {verdict.verdict}: {verdict.detail}"))


def _judge(claim: Claim, values: MetricValues, rows: Sequence[dict]) -> Verdict:
    """The claim's test on its values."""
    if claim.test in ("close", "at_least", "at_most"):
        return _exact(claim, values, rows)
    test = {"lower": _compare, "higher": _compare, "decreasing": _trend, "increasing": _trend,
            "less_spread": _spread, "larger_gain": _gain}[claim.test]
    return test(claim, values)
