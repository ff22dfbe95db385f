"""Checks of plain arguments: numbers, counts, ranges, choices. Each returns the value in its
canonical type (``float``, ``int``) or raises ``ValueError`` naming the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real


def check_real(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite real number, else raise."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise."""
    value = check_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def check_nonnegative(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number >= 0, else raise."""
    value = check_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_count(name: str, value: int, minimum: int) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``, else raise."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_probability_below_one(name: str, value: float, meaning: str) -> float:
    """Return ``value`` as a float if it lies in ``[0, 1)``; ``meaning`` says what it is."""
    value = check_real(name, value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} ({meaning}) must be in [0, 1), got {value}")
    return value


def check_dataset_size(n: int, batch_size: int | None = None) -> int:
    """Check the dataset size ``n`` of Def. 3.2 / Def. 5.7: an integer >= 2 and >= the batch."""
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise ValueError(f"n (the dataset size) must be an integer >= 2, got {n!r}")
    n = int(n)
    if n < 2:
        raise ValueError(f"n (the dataset size) must be an integer >= 2, got {n}")
    if batch_size is not None and n < batch_size:
        raise ValueError(
            f"n (the dataset size) must be at least the batch size {batch_size}, got {n}; "
            "pass the number of training samples, e.g. len(dataset)"
        )
    return n


def check_margin_band(delta_plus: float, delta_minus: float) -> tuple[float, float]:
    """LMCL's thresholds must satisfy ``0 <= delta_plus < delta_minus <= 1``."""
    delta_plus = check_real("delta_plus", delta_plus)
    delta_minus = check_real("delta_minus", delta_minus)
    if not delta_plus < delta_minus:
        raise ValueError(
            f"delta_plus must be < delta_minus (the margin band is (delta_plus, delta_minus)), "
            f"got delta_plus={delta_plus}, delta_minus={delta_minus}"
        )
    if delta_plus < 0 or delta_minus > 1:
        raise ValueError(
            "delta_plus and delta_minus must lie in [0, 1], the range of the distance "
            f"(1 - cos) / 2; got delta_plus={delta_plus}, delta_minus={delta_minus}"
        )
    return delta_plus, delta_minus
