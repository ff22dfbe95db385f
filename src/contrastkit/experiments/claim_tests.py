"""The t-test verdicts of the claims: one paired test (:func:`paired_verdict`, with the
claim's minimum effect), several tests of which every one must hold (:func:`every_verdict`:
the levels of ``for_each``, the steps of a monotone trend; Holm's adjustment across them) and
the trends (:func:`trend_verdict`: ``monotone``, every adjacent step, or ``end_to_end``, the
last level against the first, with every step that goes against the claim reported).

The minimum detectable effect is computed beside every t-test at alpha over the number of
t-test claims of the report (and over the number of levels or steps), the strictest threshold
of Holm's adjustment; the report shows it beside an inconclusive verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from contrastkit.experiments.claim_specs import Claim
from contrastkit.experiments.claim_values import MetricValues, describe
from contrastkit.experiments.claim_verdict import Verdict, p_or_one
from contrastkit.experiments.stats import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    POWER,
    SUPPORTED,
    OneSampleTest,
    holm_adjust,
    minimum_detectable_effect,
    one_sample_test,
    shifted_differences,
    step_tests,
)


def paired(claim: Claim, pairs: Mapping[object, tuple[float, ...]], direction: str,
           threshold: bool = True) -> OneSampleTest:
    """The one-sided paired t-test of the pairs (seed -> (treatment, control)), against the
    claim's minimum effect when ``threshold`` (:func:`~.stats.shifted_differences`); its
    ``mean`` is the plain mean difference either way."""
    both = np.array(list(pairs.values()), dtype=np.float64).reshape(-1, 2)
    scale = float(np.abs(both).max()) if both.size else 0.0
    plain = both[:, 0] - both[:, 1]
    if not threshold or not (claim.min_effect or claim.min_share):
        return one_sample_test(plain, direction, claim.alpha, scale=scale)
    shifted = shifted_differences(both[:, 0], both[:, 1], direction,
                                  claim.min_share or claim.min_effect, bool(claim.min_share))
    result = one_sample_test(shifted, direction, claim.alpha, scale=scale)
    mean = float(plain.mean()) if plain.size else math.nan
    return result._replace(mean=mean)


def threshold_words(claim: Claim) -> str:
    """``; tested against the claim's minimum effect: lower by at least 0.5 of the control's
    value ...`` (``min_share``), ``... by at least 0.02 ...`` (``min_effect``), or ``""``."""
    if not (claim.min_effect or claim.min_share):
        return ""
    size = (f"{claim.min_share:g} of the control's value" if claim.min_share
            else f"{claim.min_effect:.4g}")
    return (f"; tested against the claim's minimum effect: {claim.test} by at least {size} "
            f"(the null hypothesis is a smaller effect)")


def paired_verdict(claim: Claim, result: OneSampleTest, detail: str, family: int,
                   noun: str = "mean difference") -> Verdict:
    """The verdict of one t-test, with its minimum detectable effect."""
    mde, note = math.nan, ""
    if result.n < 2:
        detail += f"; needs >= 2 seeds, the results have {result.n}"
    else:
        detail += (f"; {noun} {result.mean:.4g}, d_z {result.effect_size:.3g}, one-sided p "
                   f"{result.p_value:.3g}, {result.n} seeds")
        mde = minimum_detectable_effect(result.std, result.n, claim.alpha / family)
        note = (f"; the minimum detectable effect is {mde:.3g}: the true {noun} that this "
                f"one-sided test at alpha {claim.alpha:g} / {family} (the report's t-test "
                f"claims) detects with power {POWER:g}, given the standard deviation "
                f"{result.std:.3g} of the per-seed values and {result.n} seeds")
    return Verdict(claim.id, claim.text, result.verdict, result.mean, result.effect_size,
                   result.p_value, result.n, detail, mde, p_opposite=result.p_opposite,
                   alpha=claim.alpha, mde_note=note)


def every_verdict(claim: Claim, labels: Sequence[str], results: Sequence[OneSampleTest],
                  what: str, family: int, kind: str = "level") -> Verdict:
    """The verdict of a claim that holds at every one of several tests (``labels`` name them):
    Holm's adjustment across them, separately for the claimed and the opposite p-values;
    supported if every adjusted p is below alpha, not supported if some adjusted opposite p
    is, else inconclusive. The weakest test (the largest p) is reported with its adjusted p;
    the opposite p is the smallest adjusted one."""
    m = len(results)
    claimed = holm_adjust([p_or_one(result.p_value) for result in results])
    opposite = holm_adjust([p_or_one(result.p_opposite) for result in results])
    verdict = (SUPPORTED if (claimed < claim.alpha).all() else
               NOT_SUPPORTED if (opposite < claim.alpha).any() else INCONCLUSIVE)
    weakest = max(range(m), key=lambda index: _nan_last(results[index].p_value))
    worst = results[weakest]
    n = min(result.n for result in results)
    each = "; ".join(
        f"{label}: {claim.test} {result.verdict} alone, mean difference {result.mean:.4g}, "
        f"p {result.p_value:.3g}, Holm p {p:.3g}, Holm opposite p {q:.3g}"
        for label, result, p, q in zip(labels, results, claimed, opposite, strict=True))
    detail = (f"{what}: {m} paired tests, Holm's step-down adjustment across them, for the "
              f"claimed and for the opposite direction ({each}); the weakest {kind}, "
              f"{labels[weakest]}, is reported with its Holm-adjusted p")
    p_value = math.nan if math.isnan(worst.p_value) else float(claimed[weakest])
    mde, note = math.nan, ""
    if n < 2:
        detail += f"; needs >= 2 seeds at every {kind}, the results have {n}"
    else:
        detail += (f"; mean difference {worst.mean:.4g}, d_z {worst.effect_size:.3g}, "
                   f"Holm-adjusted one-sided p {p_value:.3g}, {n} seeds")
        level_alpha = claim.alpha / (m * family)
        each_mde = [minimum_detectable_effect(result.std, result.n, level_alpha)
                    for result in results]
        largest = max(range(m), key=lambda index: each_mde[index])
        mde = each_mde[largest]
        note = (f"; the minimum detectable effect is {mde:.3g}: the largest over the {m} "
                f"{kind}s (at {labels[largest]}, standard deviation {results[largest].std:.3g} "
                f"of its differences, {results[largest].n} seeds) of the true mean "
                f"difference that a {kind}'s one-sided test at alpha / ({m} x {family}) = "
                f"{level_alpha:.3g} (Holm's strictest threshold, across the {kind}s and the "
                f"report's t-test claims) detects with power {POWER:g}")
    return Verdict(claim.id, claim.text, verdict, worst.mean, worst.effect_size, p_value, n,
                   detail, mde, p_opposite=float(opposite.min()), alpha=claim.alpha,
                   mde_note=note)


def trend_verdict(claim: Claim, values: MetricValues, levels: list, family: int) -> Verdict:
    """``decreasing`` / ``increasing`` along ``claim.along``, per seed averaged over the other
    axes: ``monotone``, every adjacent step in the claimed direction (:func:`every_verdict`
    of :func:`~.stats.step_tests`); ``end_to_end``, the last level against the first (one
    paired test), with each step that goes significantly against the claim (Holm across the
    steps) named in the detail, so a U-shape shows."""
    where = dict(claim.where)
    per_seed = values.aligned(claim.named, [{**where, claim.along: level} for level in levels],
                              ["along"] * len(levels))
    table = np.array(list(per_seed.values()), dtype=np.float64).reshape(-1, len(levels))
    direction = "lower" if claim.test == "decreasing" else "higher"
    steps = step_tests(table, direction, claim.alpha) if len(table) else []
    labels = [f"{claim.along} {a} to {b}" for a, b in zip(levels, levels[1:], strict=False)]
    what = f"{claim.metric} {claim.test} along {claim.along} in {levels} ({describe(where)})"
    if claim.trend == "monotone":
        if not steps:
            return paired_verdict(claim, one_sample_test([], direction, claim.alpha),
                                  f"{what}, monotone", family)
        return every_verdict(claim, labels, steps, f"{what}, monotone: every adjacent step, "
                                                   f"per seed averaged over the other axes",
                             family, kind="step")
    ends = {seed: (row[-1], row[0]) for seed, row in per_seed.items()}
    result = paired(claim, ends, direction, threshold=False)
    detail = (f"{what}, end to end: {claim.along}={levels[-1]} against {claim.along}="
              f"{levels[0]}, per seed averaged over the other axes"
              f"{_reversals(steps, labels, claim.alpha)}")
    return paired_verdict(claim, result, detail, family)


def _reversals(steps: Sequence[OneSampleTest], labels: Sequence[str], alpha: float) -> str:
    """The steps that go significantly against the claim (Holm across the steps), in words."""
    if len(steps) < 2:
        return ""
    opposite = holm_adjust([p_or_one(step.p_opposite) for step in steps])
    against = [f"{label} (mean step {step.mean:.4g}, opposite p {step.p_opposite:.2g}, Holm "
               f"{q:.2g})" for label, step, q in zip(labels, steps, opposite, strict=True)
               if q < alpha]
    if not against:
        return ("; no adjacent step goes significantly against the claim (Holm across the "
                f"{len(steps)} steps, alpha {alpha:g})")
    return (f"; not monotone: {len(against)} of the {len(steps)} adjacent steps go "
            f"significantly against the claim (Holm across the steps, alpha {alpha:g}): "
            + "; ".join(against))


def _nan_last(p_value: float) -> float:
    return math.inf if math.isnan(p_value) else p_value
