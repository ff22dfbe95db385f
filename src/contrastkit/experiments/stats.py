"""The statistics of a reproduction: a t-interval over seeds (:func:`mean_interval`), a
one-sided paired t-test over seeds (:func:`paired_test`, a one-sample t-test of the paired
differences: :func:`one_sample_test`) that turns a claimed direction into a verdict:
``supported``, ``not supported`` or ``inconclusive``; Holm's step-down adjustment of the
p-values of a claim tested at several levels or steps (:func:`holm_adjust`); the paired
values of a minimum-effect test (:func:`shifted_differences`); the tests of the adjacent
steps of a monotone trend (:func:`step_tests`); and the minimum detectable effect of a
one-sided t-test (:func:`minimum_detectable_effect`). ``not converged`` (:data:`NOT_CONVERGED`)
is the verdict of a claim whose cells did not all converge (see
:mod:`contrastkit.experiments.claims`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from contrastkit.checks.scalars import check_choice, check_real

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
NOT_CONVERGED = "not converged"
DIRECTIONS = ("lower", "higher")
#: The power at which :func:`minimum_detectable_effect` is reported.
POWER = 0.8

# differences that agree to within this many ulps of the compared values are equal: what is
# left of them is rounding, not a spread a t-test could weigh
_ROUNDING = 8 * np.finfo(np.float64).eps


class Interval(NamedTuple):
    """The mean of ``n`` values with its ``confidence`` interval from Student's t.

    ``std`` is the sample standard deviation (``ddof=1``). With ``n = 1`` the mean is the value
    and ``std``, ``ci_low``, ``ci_high`` are NaN (one value says nothing about its spread);
    with ``n = 0`` every field but ``n`` is NaN.
    """

    n: int
    mean: float
    std: float
    ci_low: float
    ci_high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (NaN when the interval is)."""
        return (self.ci_high - self.ci_low) / 2


class PairedTest(NamedTuple):
    """The outcome of :func:`paired_test`.

    ``mean_difference`` is the mean of ``treatment - control``; ``effect_size`` is Cohen's
    ``d_z`` (that mean over the standard deviation of the differences, ``ddof=1``);
    ``p_value`` is the one-sided p-value in the claimed direction (the opposite direction's is
    ``1 - p_value``); ``n`` is the number of pairs.
    """

    verdict: str
    mean_difference: float
    effect_size: float
    p_value: float
    n: int


class OneSampleTest(NamedTuple):
    """The outcome of :func:`one_sample_test`.

    ``mean`` and ``std`` (``ddof=1``) are those of the values, ``effect_size`` their ratio
    (Cohen's d); ``p_value`` is the one-sided p-value in the claimed direction and
    ``p_opposite`` the one in the opposite direction (computed on its own, not as
    ``1 - p_value``, so a small one keeps its digits); ``n`` is the number of values.
    """

    verdict: str
    mean: float
    std: float
    effect_size: float
    p_value: float
    p_opposite: float
    n: int


def _finite_values(name: str, values: ArrayLike) -> np.ndarray:
    """``values`` as a 1-d float64 array, or a ``ValueError`` naming ``name``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array.tolist()}")
    return array


def _check_alpha(alpha: float, name: str = "alpha") -> float:
    alpha = check_real(name, alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {alpha}")
    return alpha


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The mean of ``values`` with its two-sided ``confidence`` interval from Student's t with
    ``n - 1`` degrees of freedom (``mean ± t * std / sqrt(n)``); see :class:`Interval` for
    ``n = 0`` and ``n = 1``. Values must be finite; ``confidence`` must lie in ``(0, 1)``.

    >>> interval = mean_interval([1.0, 2.0, 3.0])
    >>> interval.n, interval.mean, round(interval.half_width, 4)
    (3, 2.0, 2.4841)
    """
    confidence = check_real("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    array = _finite_values("values", values)
    n = array.size
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, math.nan)
    mean = float(array.mean())
    if n == 1:
        return Interval(1, mean, math.nan, math.nan, math.nan)
    std = float(array.std(ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * std / math.sqrt(n)
    return Interval(n, mean, std, mean - half, mean + half)


def paired_test(treatment: Sequence[float], control: Sequence[float], direction: str = "lower",
                alpha: float = 0.05) -> PairedTest:
    """One-sided paired t-test of the claim that ``treatment`` is ``direction`` ("lower" or
    "higher") than ``control``, pair ``i`` being seed ``i`` of both.

    The verdict is ``supported`` when the test in the claimed direction has ``p < alpha``,
    ``not supported`` when the test in the opposite direction has ``p < alpha``, else
    ``inconclusive``; the p-value is that of ``scipy.stats.ttest_rel(treatment, control,
    alternative=...)`` in the claimed direction.

    Fewer than 2 pairs: ``inconclusive`` with NaN effect size and p-value. Differences that are
    all equal (to within rounding of the compared values), where the t statistic is 0 / 0 or
    infinite, are decided without it: all zero is ``inconclusive`` (p = 1, d_z = 0); a constant
    nonzero difference is ``supported`` with p = 0 in the claimed direction and ``not
    supported`` with p = 1 against it, d_z = ±inf.

    >>> result = paired_test([0.10, 0.12, 0.11], [0.20, 0.21, 0.23], direction="lower")
    >>> result.verdict, result.n
    ('supported', 3)
    """
    check_choice("direction", direction, DIRECTIONS)
    alpha = _check_alpha(alpha)
    treated, controls = _finite_values("treatment", treatment), _finite_values("control", control)
    if treated.size != controls.size:
        raise ValueError(f"treatment and control must pair up, got {treated.size} and "
                         f"{controls.size} values")
    scale = float(np.abs(np.concatenate([treated, controls])).max()) if treated.size else 0.0
    result = one_sample_test(treated - controls, direction, alpha, scale=scale)
    return PairedTest(result.verdict, result.mean, result.effect_size, result.p_value, result.n)


def one_sample_test(values: ArrayLike, direction: str = "lower", alpha: float = 0.05,
                    scale: float | None = None) -> OneSampleTest:
    """One-sided one-sample t-test of the claim that the mean of ``values`` is below zero
    (``direction="lower"``) or above it (``"higher"``).

    The p-values are those of ``scipy.stats.ttest_1samp(values, 0, alternative=...)`` in the
    claimed and the opposite direction; the verdict is ``supported`` when the claimed one is
    ``< alpha``, ``not supported`` when the opposite one is, else ``inconclusive``. A paired
    test is this test of the differences (:func:`paired_test`).

    Fewer than 2 values: ``inconclusive``, with NaN std, effect size and p-values. Values that
    are all equal to within rounding of ``scale`` (default: the largest ``|value|``; a paired
    test passes the largest compared value) are decided without the t statistic, as in
    :func:`paired_test`: all zero is ``inconclusive`` (both p-values 1, d 0), a constant
    nonzero value ``supported`` (p 0, opposite p 1) or ``not supported`` (p 1, opposite p 0),
    with std 0 and d = ±inf.

    >>> result = one_sample_test([0.5, 0.7, 0.6, 0.8], direction="higher")
    >>> result.verdict, round(result.mean, 2), round(result.p_value, 4)
    ('supported', 0.65, 0.001)
    """
    check_choice("direction", direction, DIRECTIONS)
    alpha = _check_alpha(alpha)
    array = _finite_values("values", values)
    n = array.size
    if n < 2:
        mean = float(array.mean()) if n else math.nan
        return OneSampleTest(INCONCLUSIVE, mean, math.nan, math.nan, math.nan, math.nan, n)
    sign = -1.0 if direction == "lower" else 1.0
    mean, std = float(array.mean()), float(array.std(ddof=1))
    scale = float(np.abs(array).max()) if scale is None else check_real("scale", scale)
    rounding = _ROUNDING * scale
    if std <= rounding:
        return _constant(mean, sign, rounding, n)
    t = sign * math.sqrt(n) * mean / std  # large when the data agree with the claim
    p_claimed, p_opposite = float(stats.t.sf(t, n - 1)), float(stats.t.cdf(t, n - 1))
    return OneSampleTest(_verdict(p_claimed, p_opposite, alpha), mean, std, mean / std,
                         p_claimed, p_opposite, n)


def _constant(mean: float, sign: float, rounding: float, n: int) -> OneSampleTest:
    """The test of values that are all ``mean`` (see :func:`one_sample_test`)."""
    if abs(mean) <= rounding:
        return OneSampleTest(INCONCLUSIVE, 0.0, 0.0, 0.0, 1.0, 1.0, n)
    effect = math.copysign(math.inf, mean)
    if sign * mean > 0:
        return OneSampleTest(SUPPORTED, mean, 0.0, effect, 0.0, 1.0, n)
    return OneSampleTest(NOT_SUPPORTED, mean, 0.0, effect, 1.0, 0.0, n)


def _verdict(p_claimed: float, p_opposite: float, alpha: float) -> str:
    """The verdict of the one-sided p-values in the claimed and the opposite direction."""
    if p_claimed < alpha:
        return SUPPORTED
    if p_opposite < alpha:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values of ``p_values`` (each in ``[0, 1]``), in their order.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of ``p_(i)``
    is ``max_{j <= i} min(1, (m - j + 1) p_(j))``: monotone in the p-values, never below them,
    at most 1. Holm's procedure at level ``alpha`` rejects exactly the hypotheses whose
    adjusted p-value is ``< alpha``, and rejects any true hypothesis with probability at most
    ``alpha`` (the family-wise error rate), whatever the dependence between the tests. Ties
    get the same adjusted value whatever their order.

    >>> holm_adjust([0.01, 0.04, 0.03]).round(6).tolist()
    [0.03, 0.06, 0.06]
    """
    array = np.asarray(p_values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"p_values must be a flat sequence of numbers, got shape "
                         f"{array.shape}")
    if not (np.isfinite(array).all() and ((array >= 0) & (array <= 1)).all()):
        raise ValueError(f"p_values must lie in [0, 1], got {array.tolist()}")
    m = array.size
    order = np.argsort(array, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * array[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def shifted_differences(treatment: ArrayLike, control: ArrayLike,
                        direction: str = "lower", min_effect: float = 0.0,
                        relative: bool = False) -> np.ndarray:
    """The paired values whose mean is below 0 (``direction="lower"``) or above it
    (``"higher"``) exactly when ``treatment`` beats ``control`` by at least ``min_effect``:
    a minimum-effect test is the one-sample test of these (:func:`one_sample_test`).

    Absolute (``relative=False``), in the metric's units: ``treatment - control + min_effect``
    for "lower" (the null: the fall is less than ``min_effect``), ``treatment - control -
    min_effect`` for "higher". Relative, a share of the control's value: ``treatment - (1 -
    min_effect) control`` for "lower" (the null: less than that share of the control is
    removed), ``treatment - (1 + min_effect) control`` for "higher". ``min_effect = 0`` is
    the plain paired difference either way.

    >>> shifted_differences([0.1, 0.2], [0.4, 0.4], "lower", 0.5, relative=True).tolist()
    [-0.1, 0.0]
    """
    check_choice("direction", direction, DIRECTIONS)
    min_effect = check_real("min_effect", min_effect)
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    treated, controls = _finite_values("treatment", treatment), _finite_values("control", control)
    if treated.size != controls.size:
        raise ValueError(f"treatment and control must pair up, got {treated.size} and "
                         f"{controls.size} values")
    sign = -1.0 if direction == "lower" else 1.0
    if relative:
        return treated - (1.0 + sign * min_effect) * controls
    return treated - controls - sign * min_effect


def step_tests(values: ArrayLike, direction: str = "lower", alpha: float = 0.05
               ) -> list[OneSampleTest]:
    """The paired test of every adjacent step of ``values`` (rows: seeds x ``L >= 2``
    levels, in the levels' order): step ``i`` tests that level ``i + 1`` is ``direction``
    than level ``i`` (:func:`one_sample_test` of ``values[:, i + 1] - values[:, i]``), so a
    monotone claim holds when every one of the ``L - 1`` steps does (Holm's adjustment across
    them: :func:`holm_adjust`).

    >>> [test.verdict for test in step_tests([[3.0, 2.0, 2.5], [3.1, 2.0, 2.4],
    ...                                       [2.9, 2.1, 2.6]], "lower")]
    ['supported', 'not supported']
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 2:
        raise ValueError(f"values must be a table of seeds x >= 2 levels, got shape "
                         f"{array.shape}")
    return [one_sample_test(array[:, i + 1] - array[:, i], direction, alpha,
                            scale=float(np.abs(array[:, i:i + 2]).max()) if array.size else 0.0)
            for i in range(array.shape[1] - 1)]


def minimum_detectable_effect(std: float, n: int, alpha: float = 0.05,
                              power: float = POWER) -> float:
    """The smallest true mean (in the units of the values) that the one-sided one-sample
    t-test of :func:`one_sample_test` at level ``alpha`` detects with probability ``power``,
    for ``n`` values of standard deviation ``std`` (for a paired test: of the differences).

    Exact, from the noncentral t distribution: the test rejects when ``T > t_c``, ``t_c`` the
    ``1 - alpha`` quantile of Student's t with ``n - 1`` degrees of freedom; at a true mean
    ``delta`` the statistic is noncentral t with noncentrality ``lambda = delta sqrt(n) /
    std``. The noncentrality solving ``P(T > t_c) = power`` (``scipy.stats.nct.sf``, solved
    with ``scipy.optimize.brentq``) gives ``delta = lambda std / sqrt(n)``. NaN when ``n < 2``
    or ``std`` is NaN; 0 when ``std`` is 0 (no spread: any nonzero mean is decided).

    >>> round(minimum_detectable_effect(1.0, 10), 3)
    0.853
    """
    alpha = _check_alpha(alpha)
    power = _check_alpha(power, "power")
    std = float(std)
    if n < 2 or math.isnan(std):
        return math.nan
    if std < 0 or math.isinf(std):
        raise ValueError(f"std must be finite and >= 0, got {std}")
    if std == 0:
        return 0.0
    df = n - 1
    critical = float(stats.t.ppf(1 - alpha, df))

    def shortfall(noncentrality: float) -> float:
        return float(stats.nct.sf(critical, df, noncentrality)) - power

    # power is alpha at noncentrality 0 and grows with it
    low, high = 0.0, 0.0
    step = critical + float(stats.norm.ppf(power)) + 1.0
    while shortfall(high) < 0:
        low, high = high, high + abs(step)
        step *= 2
    while shortfall(low) > 0:
        high, low = low, low - abs(step)
        step *= 2
    noncentrality = optimize.brentq(shortfall, low, high, xtol=1e-12, rtol=1e-14)
    return noncentrality * std / math.sqrt(n)
