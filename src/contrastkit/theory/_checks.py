"""Argument checks for the theory functions."""

from __future__ import annotations

import math
from numbers import Integral, Real


def check_count(name: str, value: int, minimum: int) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite real number, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise ValueError."""
    value = check_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value
