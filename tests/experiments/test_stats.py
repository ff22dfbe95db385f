"""The interval over seeds and the paired test, checked against scipy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from contrastkit.experiments.stats import mean_interval, paired_test


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
