"""The interval over seeds, the paired and one-sample tests, Holm's adjustment, the minimum
effect, the steps of a monotone trend and the minimum detectable effect, checked against
scipy, numpy and their definitions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from contrastkit.experiments.stats import (
    holm_adjust,
    mean_interval,
    minimum_detectable_effect,
    one_sample_test,
    paired_test,
    shifted_differences,
    step_tests,
)


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_interval_is_scipys_t_interval(n, confidence):
    values = np.random.default_rng(n).normal(0.3, 0.05, size=n)
    interval = mean_interval(values.tolist(), confidence=confidence)
    low, high = stats.t.interval(confidence, n - 1, loc=values.mean(), scale=stats.sem(values))
    assert interval.n == n
    assert interval.mean == pytest.approx(values.mean(), rel=1e-12)
    assert interval.std == pytest.approx(values.std(ddof=1), rel=1e-12)
    assert (interval.ci_low, interval.ci_high) == pytest.approx((low, high), rel=1e-12)
    assert interval.half_width == pytest.approx((high - low) / 2, rel=1e-12)


def test_one_value_has_a_mean_and_no_spread():
    interval = mean_interval([0.25])
    assert (interval.n, interval.mean) == (1, 0.25)
    assert all(math.isnan(x) for x in (interval.std, interval.ci_low, interval.ci_high))
    assert math.isnan(interval.half_width)


def test_no_value_has_nothing_but_its_count():
    interval = mean_interval([])
    assert interval.n == 0
    assert all(math.isnan(x) for x in interval[1:])


def test_equal_values_have_a_zero_width_interval():
    assert mean_interval([0.5, 0.5, 0.5])[1:] == (0.5, 0.0, 0.5, 0.5)


@pytest.mark.parametrize(("values", "confidence", "word"), [
    ([1.0, math.nan], 0.95, "values"),
    ([1.0, 2.0], 1.0, "confidence"),
    ([1.0, 2.0], 0.0, "confidence"),
    ([[1.0, 2.0]], 0.95, "values"),
])
def test_bad_interval_input_names_the_argument(values, confidence, word):
    with pytest.raises(ValueError, match=word):
        mean_interval(values, confidence=confidence)


@pytest.mark.parametrize("direction", ["lower", "higher"])
@pytest.mark.parametrize("shift", [-0.5, -0.05, 0.0, 0.05, 0.5])
def test_the_p_value_is_scipys_one_sided_paired_t_test(direction, shift):
    rng = np.random.default_rng(7)
    control = rng.normal(1.0, 0.2, size=5)
    treatment = control + shift + rng.normal(0.0, 0.1, size=5)
    result = paired_test(treatment.tolist(), control.tolist(), direction=direction)
    alternative = "less" if direction == "lower" else "greater"
    reference = stats.ttest_rel(treatment, control, alternative=alternative)
    differences = treatment - control
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert result.mean_difference == pytest.approx(differences.mean(), rel=1e-12)
    assert result.effect_size == pytest.approx(differences.mean() / differences.std(ddof=1),
                                               rel=1e-12)
    assert result.n == 5


def _verdict_from_scipy(treatment, control, direction, alpha):
    claimed, opposite = ("less", "greater") if direction == "lower" else ("greater", "less")
    if stats.ttest_rel(treatment, control, alternative=claimed).pvalue < alpha:
        return "supported"
    if stats.ttest_rel(treatment, control, alternative=opposite).pvalue < alpha:
        return "not supported"
    return "inconclusive"


@pytest.mark.parametrize("seed", range(12))
def test_the_verdict_follows_both_one_sided_tests(seed):
    rng = np.random.default_rng(seed)
    control = rng.normal(0.0, 1.0, size=4)
    treatment = control + rng.normal(rng.choice([-1.0, 0.0, 1.0]), 0.5, size=4)
    for direction in ("lower", "higher"):
        result = paired_test(treatment, control, direction=direction, alpha=0.1)
        assert result.verdict == _verdict_from_scipy(treatment, control, direction, 0.1)


def test_a_clear_drop_is_supported_as_lower_and_contradicts_higher():
    control = [0.30, 0.32, 0.31, 0.29]
    treatment = [0.20, 0.23, 0.20, 0.19]
    assert paired_test(treatment, control, "lower").verdict == "supported"
    assert paired_test(treatment, control, "higher").verdict == "not supported"


def test_noise_is_inconclusive():
    control = [0.30, 0.32, 0.31]
    treatment = [0.31, 0.30, 0.315]
    assert paired_test(treatment, control, "lower").verdict == "inconclusive"
    assert paired_test(treatment, control, "higher").verdict == "inconclusive"


@pytest.mark.parametrize("pairs", [0, 1])
def test_fewer_than_two_pairs_is_inconclusive(pairs):
    result = paired_test([0.1] * pairs, [0.9] * pairs, "lower")
    assert (result.verdict, result.n) == ("inconclusive", pairs)
    assert math.isnan(result.p_value) and math.isnan(result.effect_size)


def _without_warnings(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return paired_test(*args, **kwargs)


def test_a_constant_difference_in_the_claimed_direction_is_supported_with_p_zero():
    result = _without_warnings([0.2, 0.4, 0.7], [0.3, 0.5, 0.8], "lower")
    assert (result.verdict, result.p_value) == ("supported", 0.0)
    assert result.mean_difference == pytest.approx(-0.1)
    assert result.effect_size == -math.inf


def test_a_constant_difference_against_the_claim_is_not_supported_with_p_one():
    result = _without_warnings([0.2, 0.4, 0.7], [0.3, 0.5, 0.8], "higher")
    assert (result.verdict, result.p_value, result.effect_size) == ("not supported", 1.0,
                                                                    -math.inf)


def test_no_difference_at_all_is_inconclusive():
    result = _without_warnings([0.2, 0.4, 0.7], [0.2, 0.4, 0.7], "lower")
    assert result == ("inconclusive", 0.0, 0.0, 1.0, 3)


def test_differences_equal_up_to_rounding_count_as_constant():
    """0.3 - 0.2 and 1.3 - 1.2 differ in the last bits; that is no spread to test."""
    result = _without_warnings([0.3, 1.3, 2.3], [0.2, 1.2, 2.2], "higher")
    assert (result.verdict, result.p_value, result.effect_size) == ("supported", 0.0, math.inf)


@pytest.mark.parametrize(("kwargs", "word"), [
    ({"direction": "down"}, "direction"),
    ({"alpha": 1.5}, "alpha"),
    ({"alpha": 0.0}, "alpha"),
    ({"treatment": [1.0, math.inf]}, "treatment"),
    ({"control": [1.0]}, "pair up"),
])
def test_bad_test_input_names_the_argument(kwargs, word):
    arguments = {"treatment": [1.0, 2.0], "control": [1.5, 2.5], **kwargs}
    with pytest.raises(ValueError, match=word):
        paired_test(**arguments)


# --- the one-sample test (the paired test's differences, the trend's slopes) -----------------


@pytest.mark.parametrize("direction", ["lower", "higher"])
@pytest.mark.parametrize("shift", [-0.5, -0.05, 0.0, 0.05, 0.5])
def test_the_one_sample_p_values_are_scipys_in_both_directions(direction, shift):
    values = shift + np.random.default_rng(3).normal(0.0, 0.1, size=6)
    result = one_sample_test(values.tolist(), direction=direction)
    claimed, opposite = ("less", "greater") if direction == "lower" else ("greater", "less")
    assert result.p_value == pytest.approx(
        stats.ttest_1samp(values, 0.0, alternative=claimed).pvalue, rel=1e-9)
    assert result.p_opposite == pytest.approx(
        stats.ttest_1samp(values, 0.0, alternative=opposite).pvalue, rel=1e-9)
    assert (result.mean, result.std) == pytest.approx((values.mean(), values.std(ddof=1)),
                                                      rel=1e-12)
    assert result.effect_size == pytest.approx(values.mean() / values.std(ddof=1), rel=1e-12)
    assert result.n == 6


def test_a_tiny_opposite_p_value_keeps_its_digits():
    """1 - p_claimed would round it to 0; computed on its own it is scipy's."""
    values = np.array([-1.0, -1.1, -0.9, -1.05, -0.95])
    result = one_sample_test(values, direction="higher")
    assert result.verdict == "not supported"
    reference = stats.ttest_1samp(values, 0.0, alternative="less").pvalue
    assert 0 < reference < 1e-5 and result.p_opposite == pytest.approx(reference, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_the_paired_test_is_the_one_sample_test_of_the_differences(seed):
    rng = np.random.default_rng(seed)
    control = rng.normal(0.0, 1.0, size=5)
    treatment = control + rng.normal(0.3, 0.5, size=5)
    paired = paired_test(treatment, control, "higher")
    alone = one_sample_test(treatment - control, "higher")
    assert (paired.verdict, paired.n) == (alone.verdict, alone.n)
    assert (paired.mean_difference, paired.effect_size, paired.p_value) == pytest.approx(
        (alone.mean, alone.effect_size, alone.p_value), rel=1e-12)


def test_constant_values_are_decided_without_the_t_statistic():
    result = one_sample_test([0.2, 0.2, 0.2], "higher")
    assert result._replace(mean=0.2) == ("supported", 0.2, 0.0, math.inf, 0.0, 1.0, 3)
    assert result.mean == pytest.approx(0.2)
    assert one_sample_test([0.2, 0.2, 0.2], "lower").verdict == "not supported"
    assert one_sample_test([0.0, 0.0], "lower") == ("inconclusive", 0.0, 0.0, 0.0, 1.0, 1.0, 2)
    single = one_sample_test([0.3], "lower")
    assert single.verdict == "inconclusive" and single.mean == 0.3 and math.isnan(single.std)


# --- Holm's step-down adjustment --------------------------------------------------------------


def _holm_rejects(p_values, alpha):
    """Holm's procedure from its definition: sort the p-values; reject the i-th smallest (i
    from 1) while p_(i) < alpha / (m - i + 1); stop at the first that is not."""
    m = len(p_values)
    rejected = [False] * m
    for step, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if not p_values[index] < alpha / (m - step):
            break
        rejected[index] = True
    return rejected


def _holm_formula(p_values):
    """max over j <= i of min(1, (m - j + 1) p_(j)), written as a loop."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


@pytest.mark.parametrize(("p_values", "adjusted"), [
    ([0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),           # 3 x 0.01, then max(2 x 0.03, ...)
    ([0.01, 0.02, 0.03, 0.04], [0.04, 0.06, 0.06, 0.06]),
    ([0.029, 0.001, 0.001, 0.001, 0.001], [0.029, 0.005, 0.005, 0.005, 0.005]),
    ([0.5, 0.6], [1.0, 1.0]),                            # capped at 1
    ([0.02, 0.02], [0.04, 0.04]),                        # ties: the same value
    ([0.3], [0.3]),                                      # one test: unchanged
    ([], []),
])
def test_holm_by_hand(p_values, adjusted):
    assert holm_adjust(p_values).tolist() == pytest.approx(adjusted, abs=1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_holm_is_the_step_down_procedure_and_its_formula(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 9))
    p_values = np.round(rng.uniform(0, 0.2, size=m) ** rng.uniform(0.5, 2), 3).tolist()
    adjusted = holm_adjust(p_values)
    assert adjusted.tolist() == pytest.approx(_holm_formula(p_values), abs=1e-15)
    assert (adjusted >= np.array(p_values)).all() and (adjusted <= 1).all()
    order = np.argsort(p_values, kind="stable")
    assert (np.diff(adjusted[order]) >= 0).all()  # monotone in the p-values
    # an adjusted p-value is the smallest level at which the procedure rejects (just above it:
    # rejected; just below: not; exactly at it the two sides round differently)
    for alpha in [*(adjusted * (1 - 1e-9)).tolist(), *(adjusted * (1 + 1e-9)).tolist(), 0.01,
                  0.05, 0.1]:
        if alpha >= 1:  # a level is below 1; the cap at 1 holds only there
            continue
        assert (adjusted < alpha).tolist() == _holm_rejects(p_values, alpha)


def test_holm_does_not_depend_on_the_order_of_the_tests():
    p_values = [0.04, 0.001, 0.02, 0.02, 0.5]
    permutation = [3, 0, 4, 1, 2]
    assert holm_adjust(p_values)[permutation].tolist() == holm_adjust(
        [p_values[i] for i in permutation]).tolist()


@pytest.mark.parametrize("p_values", [[0.1, math.nan], [1.2], [-0.1], [[0.1, 0.2]]])
def test_holm_refuses_what_is_not_a_p_value(p_values):
    with pytest.raises(ValueError, match="p_values"):
        holm_adjust(p_values)


# --- the minimum effect ------------------------------------------------------------------------


@pytest.mark.parametrize(("direction", "alternative", "sign"), [("lower", "less", -1.0),
                                                                 ("higher", "greater", 1.0)])
@pytest.mark.parametrize("min_effect", [0.0, 0.01, 0.05])
def test_an_absolute_minimum_effect_is_scipys_test_against_that_mean(direction, alternative,
                                                                     sign, min_effect):
    """The claim "lower by at least d" is the t-test of the differences against the mean -d
    (scipy's ``popmean``), not against 0."""
    rng = np.random.default_rng(5)
    control = rng.normal(0.35, 0.01, size=5)
    treatment = control + sign * 0.03 + rng.normal(0, 0.01, size=5)
    shifted = shifted_differences(treatment, control, direction, min_effect)
    result = one_sample_test(shifted, direction)
    reference = stats.ttest_1samp(treatment - control, sign * min_effect,
                                  alternative=alternative)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)


@pytest.mark.parametrize(("direction", "factor"), [("lower", 0.5), ("higher", 1.5)])
def test_a_relative_minimum_effect_tests_against_that_share_of_the_control(direction, factor):
    rng = np.random.default_rng(6)
    treatment, control = rng.normal(0.2, 0.02, size=4), rng.normal(0.35, 0.02, size=4)
    shifted = shifted_differences(treatment, control, direction, 0.5, relative=True)
    assert shifted.tolist() == pytest.approx((treatment - factor * control).tolist(), abs=1e-15)


def test_a_small_fall_does_not_empty_the_band():
    """LMCL's 0.3536 -> 0.3524 is a significant fall, but not a halving: against the minimum
    effect "at least half the control's share" it is not supported."""
    control = np.array([0.3530, 0.3536, 0.3542])
    treatment = control - np.array([0.0011, 0.0012, 0.0013])
    assert one_sample_test(treatment - control, "lower").verdict == "supported"
    shifted = shifted_differences(treatment, control, "lower", 0.5, relative=True)
    assert one_sample_test(shifted, "lower").verdict == "not supported"
    emptied = control * 0.1
    assert one_sample_test(shifted_differences(emptied, control, "lower", 0.5, relative=True),
                           "lower").verdict == "supported"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_effect": -0.1}, "min_effect must be >= 0"),
    ({"direction": "down"}, "direction"),
    ({"treatment": [1.0, 2.0]}, "pair up")])
def test_a_bad_minimum_effect_is_an_error_naming_it(kwargs, message):
    arguments = {"treatment": [1.0], "control": [2.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        shifted_differences(**arguments)


# --- the steps of a monotone trend --------------------------------------------------------------


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_each_step_is_scipys_paired_test_of_adjacent_levels(direction):
    rng = np.random.default_rng(11)
    table = 0.5 - 0.02 * np.arange(5) + rng.normal(0, 0.01, size=(4, 5))
    alternative = "less" if direction == "lower" else "greater"
    steps = step_tests(table, direction)
    assert len(steps) == 4
    for i, step in enumerate(steps):
        reference = stats.ttest_rel(table[:, i + 1], table[:, i], alternative=alternative)
        assert step.p_value == pytest.approx(reference.pvalue, rel=1e-9)
        assert step.mean == pytest.approx(np.mean(table[:, i + 1] - table[:, i]), rel=1e-12)


def test_a_u_shape_has_a_step_against_the_claim():
    """Falling then rising: the end-to-end difference is a fall, the last step a rise."""
    table = [[0.30, 0.20, 0.10, 0.15], [0.31, 0.21, 0.11, 0.17], [0.29, 0.20, 0.10, 0.16]]
    verdicts = [step.verdict for step in step_tests(table, "lower")]
    assert verdicts == ["supported", "supported", "not supported"]


@pytest.mark.parametrize("table", [[[1.0]], [1.0, 2.0]])
def test_steps_need_a_table_of_two_levels(table):
    with pytest.raises(ValueError, match="values must be"):
        step_tests(table)


# --- the minimum detectable effect -------------------------------------------------------------


def _power_by_integration(effect, std, n, alpha):
    """P(T > t_c) for n normal values of mean ``effect``: the mean is normal and
    (n - 1) s^2 / std^2 chi-square, independent, so the power is the integral over v of
    Phi(lambda - t_c sqrt(v / df)) against the chi-square density (no noncentral t used)."""
    df = n - 1
    critical = stats.t.ppf(1 - alpha, df)
    noncentrality = effect * math.sqrt(n) / std

    def integrand(v):
        return stats.norm.cdf(noncentrality - critical * math.sqrt(v / df)) * stats.chi2.pdf(
            v, df)

    return integrate.quad(integrand, 0, np.inf, epsabs=1e-12, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize("n", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_at_the_minimum_detectable_effect_the_power_is_0_8(n, alpha):
    std = 0.37
    effect = minimum_detectable_effect(std, n, alpha)
    assert effect > 0
    assert _power_by_integration(effect, std, n, alpha) == pytest.approx(0.8, abs=1e-7)
    noncentrality = effect * math.sqrt(n) / std
    assert stats.nct.sf(stats.t.ppf(1 - alpha, n - 1), n - 1, noncentrality) == pytest.approx(
        0.8, abs=1e-9)


@pytest.mark.parametrize("n", [3, 8])
def test_monte_carlo_detects_the_minimum_detectable_effect_eight_times_in_ten(n):
    std, alpha, draws = 2.0, 0.05, 200_000
    effect = minimum_detectable_effect(std, n, alpha)
    samples = np.random.default_rng(n).normal(effect, std, size=(draws, n))
    t = samples.mean(axis=1) / (samples.std(axis=1, ddof=1) / math.sqrt(n))
    power = float((t > stats.t.ppf(1 - alpha, n - 1)).mean())
    assert power == pytest.approx(0.8, abs=4 * math.sqrt(0.8 * 0.2 / draws))


def test_the_minimum_detectable_effect_falls_as_n_grows_and_scales_with_the_spread():
    effects = [minimum_detectable_effect(1.0, n) for n in (2, 3, 4, 5, 10, 20, 100)]
    assert all(a > b for a, b in zip(effects, effects[1:], strict=False))
    assert minimum_detectable_effect(3.0, 7) == pytest.approx(3 * minimum_detectable_effect(
        1.0, 7), rel=1e-9)
    assert minimum_detectable_effect(1.0, 5, alpha=0.01) > minimum_detectable_effect(1.0, 5)
    # large n: the normal approximation (z_{1 - alpha} + z_power) std / sqrt(n)
    normal = (stats.norm.ppf(0.95) + stats.norm.ppf(0.8)) / math.sqrt(5000)
    assert minimum_detectable_effect(1.0, 5000) == pytest.approx(normal, rel=1e-3)


@pytest.mark.parametrize("n", [0, 1])
def test_the_minimum_detectable_effect_needs_two_values(n):
    assert math.isnan(minimum_detectable_effect(1.0, n))
    assert math.isnan(minimum_detectable_effect(math.nan, 5))
    assert minimum_detectable_effect(0.0, 5) == 0.0


@pytest.mark.parametrize(("kwargs", "word"), [
    ({"std": -1.0}, "std"), ({"alpha": 0.0}, "alpha"), ({"power": 1.0}, "power")])
def test_bad_minimum_detectable_effect_input_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        minimum_detectable_effect(**{"std": 1.0, "n": 5, **kwargs})
