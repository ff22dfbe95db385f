"""The statistics of a reproduction: a t-interval over seeds (:func:`mean_interval`) and a
one-sided paired t-test over seeds (:func:`paired_test`) that turns a claimed direction into a
verdict: ``supported``, ``not supported`` or ``inconclusive``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats

from contrastkit.checks.scalars import check_choice, check_real

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported"
INCONCLUSIVE = "inconclusive"
DIRECTIONS = ("lower", "higher")

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


def _finite_values(name: str, values: Sequence[float]) -> np.ndarray:
    """``values`` as a 1-d float64 array, or a ``ValueError`` naming ``name``."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array.tolist()}")
    return array


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
    alpha = check_real("alpha", alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    treatment = _finite_values("treatment", treatment)
    control = _finite_values("control", control)
    if treatment.size != control.size:
        raise ValueError(f"treatment and control must pair up, got {treatment.size} and "
                         f"{control.size} values")
    differences = treatment - control
    n = differences.size
    if n < 2:
        mean = float(differences.mean()) if n else math.nan
        return PairedTest(INCONCLUSIVE, mean, math.nan, math.nan, n)
    sign = -1.0 if direction == "lower" else 1.0
    mean, std = float(differences.mean()), float(differences.std(ddof=1))
    rounding = _ROUNDING * float(np.abs(np.concatenate([treatment, control])).max())
    if std <= rounding:
        return _constant_difference(mean, sign, rounding, n)
    t = sign * math.sqrt(n) * mean / std  # large when the data agree with the claim
    p_claimed, p_opposite = float(stats.t.sf(t, n - 1)), float(stats.t.cdf(t, n - 1))
    return PairedTest(_verdict(p_claimed, p_opposite, alpha), mean, mean / std, p_claimed, n)


def _constant_difference(mean: float, sign: float, rounding: float, n: int) -> PairedTest:
    """The test of differences that are all ``mean`` (see :func:`paired_test`)."""
    if abs(mean) <= rounding:
        return PairedTest(INCONCLUSIVE, 0.0, 0.0, 1.0, n)
    if sign * mean > 0:
        return PairedTest(SUPPORTED, mean, math.copysign(math.inf, mean), 0.0, n)
    return PairedTest(NOT_SUPPORTED, mean, math.copysign(math.inf, mean), 1.0, n)


def _verdict(p_claimed: float, p_opposite: float, alpha: float) -> str:
    """The verdict of the one-sided p-values in the claimed and the opposite direction."""
    if p_claimed < alpha:
        return SUPPORTED
    if p_opposite < alpha:
        return NOT_SUPPORTED
    return INCONCLUSIVE
