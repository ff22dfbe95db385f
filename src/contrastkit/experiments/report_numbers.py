"""How report.md writes a cell's numbers: our mean with its 95 % interval (clipped intervals as
their bounds) to enough digits to compare with the paper's value, variances to
:data:`VARIANCE_DIGITS` significant digits."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from contrastkit.experiments.results import metric_bounds

#: Significant digits of a variance's mean in the tables (the papers print 4: 0.1649).
VARIANCE_DIGITS = 4
#: Significant digits of a mean whose interval is of rounding size (an exact check's value,
#: such as a loss at its bound: 0.393332 against the paper's 0.3935).
EXACT_DIGITS = 6


def is_variance(metric: str) -> bool:
    """Whether ``metric`` is a variance (bounded below by 0 only)."""
    bounds = metric_bounds(metric)
    return bounds is not None and bounds[0] == 0 and math.isinf(bounds[1])


def paper_decimals(reported: Sequence[Mapping]) -> int:
    """The most decimals among the paper's values of a metric (at most 6)."""
    decimals = 0
    for entry in reported:
        value = entry.get("value")
        if isinstance(value, float) and math.isfinite(value):
            text = f"{value:.6g}"
            if "e" not in text and "." in text:
                decimals = max(decimals, len(text.split(".")[1]))
    return decimals


def format_ours(entry: Mapping, minimum: int = 0, significant: int | None = None) -> str:
    """``mean ± half-width (n=...)``, the mean to the half-width's last decimal (two
    significant digits of the half-width), to at least ``minimum`` decimals (the paper's) and
    to ``significant`` significant digits when given; with one seed, the mean alone. A
    clipped interval (not symmetric about the mean) is ``mean [low, high] (n=..., clipped)``."""
    mean, low, high, n = entry["mean"], entry["ci_low"], entry["ci_high"], entry["n"]
    half = (high - low) / 2
    if math.isnan(half):
        digits = max(significant or 4, 1)
        if minimum:
            return f"{mean:.{max(minimum, _decimals_for(mean, digits))}f} (n={n})"
        return f"{mean:.{digits}g} (n={n})"
    if half == 0:
        if minimum or significant:
            return f"{_fixed(mean, max(minimum, _decimals_for(mean, significant)))} ± 0 (n={n})"
        return f"{mean:.4g} ± 0 (n={n})"
    decimals = max(1 - math.floor(math.log10(half)), 0)
    if decimals > 6:  # a spread of rounding size: the mean is good to EXACT_DIGITS digits
        return f"{_exact(mean, minimum, significant)} ± {half:.2g} (n={n})"
    decimals = max(decimals, minimum, _decimals_for(mean, significant))
    if _clipped(mean, low, high):
        return f"{_fixed(mean, decimals)} [{_fixed(low, decimals)}, {_fixed(high, decimals)}] " \
               f"(n={n}, clipped)"
    return f"{_fixed(mean, decimals)} ± {_fixed(half, decimals)} (n={n})"


def _exact(mean: float, minimum: int, significant: int | None) -> str:
    """A mean whose interval is of rounding size: :data:`EXACT_DIGITS` significant digits (or
    ``significant``, if more), at least ``minimum`` decimals (the paper's); a mean below 1e-3,
    a zero up to rounding, to 3 significant digits."""
    if mean != 0 and abs(mean) < 1e-3:
        return f"{mean:.{max(3, significant or 0)}g}"
    digits = max(EXACT_DIGITS, significant or 0)
    return _fixed(mean, max(minimum, _decimals_for(mean, digits)))


def _decimals_for(value: float, significant: int | None) -> int:
    """The decimals that show ``significant`` significant digits of ``value`` (0 if None)."""
    if not significant or value == 0 or not math.isfinite(value):
        return 0
    return max(significant - 1 - math.floor(math.log10(abs(value))), 0)


def _fixed(value: float, decimals: int) -> str:
    return f"{value:.{min(decimals, 12)}f}"


def _clipped(mean: float, low: float, high: float) -> bool:
    """Whether an interval is not symmetric about its mean (clipped to the metric's range)."""
    return not math.isclose(mean - low, high - mean, rel_tol=1e-6, abs_tol=1e-12)
