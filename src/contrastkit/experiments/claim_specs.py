"""The claims of a recipe as data: the keys a claim may have, the tests, and
:func:`parse_claim`, which checks a claim spec (a recipe's validation may call it too);
:mod:`contrastkit.experiments.claims` tests them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from contrastkit.checks.scalars import check_nonnegative, check_real

CLAIM_KEYS = ("id", "text", "metric", "test", "along", "where", "treatment", "control",
              "across", "for_each", "target", "tolerance", "alpha", "trend", "min_effect",
              "min_share")
#: How a trend claim reads "falls / grows with": every adjacent step, or the last level
#: against the first.
TRENDS = ("monotone", "end_to_end")
# test -> the keys it needs, the keys it may have (besides id, text, metric, test, where)
TESTS = {
    "lower": (("treatment", "control"), ("for_each", "alpha", "min_effect", "min_share")),
    "higher": (("treatment", "control"), ("for_each", "alpha", "min_effect", "min_share")),
    "decreasing": (("along", "trend"), ("alpha",)),
    "increasing": (("along", "trend"), ("alpha",)),
    "less_spread": (("treatment", "control", "across"), ("alpha",)),
    "larger_gain": (("treatment", "control", "along"), ("alpha",)),
    "close": (("target", "tolerance"), ()),
    "at_least": (("target",), ("tolerance",)),
    "at_most": (("target",), ("tolerance",)),
}


@dataclasses.dataclass(frozen=True)
class Claim:
    """A claim of a recipe, its keys checked (see :func:`parse_claim`)."""

    id: str
    metric: str
    test: str
    text: str = ""
    where: Mapping = dataclasses.field(default_factory=dict)
    treatment: Mapping = dataclasses.field(default_factory=dict)
    control: Mapping = dataclasses.field(default_factory=dict)
    along: str | None = None
    across: str | None = None
    for_each: tuple[str, ...] = ()
    target: float | str | None = None
    tolerance: float = 0.0
    alpha: float = 0.05
    trend: str | None = None
    min_effect: float = 0.0
    min_share: float = 0.0

    @property
    def named(self) -> set:
        """The axes the claim names; the others are matched and averaged over."""
        named = {*self.where, *self.treatment, *self.control, *self.for_each}
        return named | {axis for axis in (self.along, self.across) if axis}


def parse_claim(spec) -> Claim:
    """A claim spec (a mapping, or an object with the claim keys as attributes; a key that is
    ``None`` or an empty mapping is absent) checked: its keys fit its test, its numbers are
    in range. ``alpha`` is accepted on every test (an exact test does not use it).
    ``for_each`` is one axis name or a list of them (one test per combination of their
    levels), kept as a tuple; its axes may not be named by ``where``, ``treatment`` or
    ``control``. A trend (``decreasing`` / ``increasing``) states its ``trend``: ``monotone``
    (every adjacent step of ``along``) or ``end_to_end`` (the last level against the first).
    A comparison may state a minimum effect, fixed before the runs: ``min_effect`` (in the
    metric's units) or ``min_share`` (a share of the control's value, in (0, 1]), not both."""
    given = _given(spec)
    name = given.get("id")
    for key in ("id", "metric", "test"):
        if key not in given:
            raise ValueError(f"claim {name!r}: missing key {key!r}")
    test = given["test"]
    if test not in TESTS:
        raise ValueError(f"claim {name!r}: test must be one of {tuple(TESTS)}, got {test!r}")
    needed, optional = TESTS[test]
    for key in needed:
        if key not in given:
            raise ValueError(f"claim {name!r}: test {test!r} needs {key!r}")
    for key in set(given) - {"id", "text", "metric", "test", "where", "alpha", *needed,
                             *optional}:
        raise ValueError(f"claim {name!r}: key {key!r} does not apply to test {test!r}")
    return Claim(**_checked_values(str(name), given))


def _given(spec) -> dict:
    """The keys a claim spec gives, ``None`` and empty mappings left out."""
    read: Callable[[str], Any]
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(CLAIM_KEYS))
        if unknown:
            raise ValueError(f"claim {spec.get('id')!r}: unknown key {unknown[0]!r}; valid "
                             f"keys: {', '.join(CLAIM_KEYS)}")
        read = spec.get
    else:
        def read(key: str) -> Any:
            return getattr(spec, key, None)
    return {key: read(key) for key in CLAIM_KEYS if read(key) is not None and read(key) != {}}


def _checked_values(name: str, given: dict) -> dict:
    """``given`` with its mappings, tolerance and alpha checked."""
    for key in ("where", "treatment", "control"):
        if not isinstance(given.get(key, {}), Mapping):
            raise ValueError(f"claim {name!r}: {key} must be a mapping of axis values, got "
                             f"{given[key]!r}")
    if set(given.get("treatment", {})) != set(given.get("control", {})):
        raise ValueError(f"claim {name!r}: treatment and control must name the same axes, got "
                         f"{sorted(given['treatment'])} and {sorted(given['control'])}")
    if "for_each" in given:
        given["for_each"] = _for_each(name, given)
    if "tolerance" in given:
        given["tolerance"] = check_nonnegative(f"claim {name!r}: tolerance", given["tolerance"])
    if "trend" in given and given["trend"] not in TRENDS:
        raise ValueError(f"claim {name!r}: trend must be one of {TRENDS}, got "
                         f"{given['trend']!r}")
    if "min_effect" in given and "min_share" in given:
        raise ValueError(f"claim {name!r}: give min_effect or min_share, not both")
    if "min_effect" in given:
        given["min_effect"] = check_nonnegative(f"claim {name!r}: min_effect",
                                                given["min_effect"])
    if "min_share" in given:
        given["min_share"] = check_real(f"claim {name!r}: min_share", given["min_share"])
        if not 0 < given["min_share"] <= 1:
            raise ValueError(f"claim {name!r}: min_share must be in (0, 1], got "
                             f"{given['min_share']}")
    if "alpha" in given:
        given["alpha"] = check_real(f"claim {name!r}: alpha", given["alpha"])
        if not 0 < given["alpha"] < 1:
            raise ValueError(f"claim {name!r}: alpha must be in (0, 1), got {given['alpha']}")
    return given


def _for_each(name: str, given: dict) -> tuple[str, ...]:
    """``for_each`` as a tuple of distinct axis names, none of them fixed by the claim."""
    value = given["for_each"]
    axes = (value,) if isinstance(value, str) else value
    if (not isinstance(axes, (list, tuple)) or not axes
            or not all(isinstance(axis, str) and axis for axis in axes)):
        raise ValueError(f"claim {name!r}: for_each must be an axis name or a non-empty list "
                         f"of axis names, got {value!r}")
    if len(set(axes)) < len(axes):
        raise ValueError(f"claim {name!r}: for_each repeats an axis: {list(axes)}")
    for key in ("where", "treatment", "control"):
        fixed = [axis for axis in axes if axis in given.get(key, {})]
        if fixed:
            raise ValueError(f"claim {name!r}: for_each axis {fixed[0]!r} is also fixed by "
                             f"{key}; a claim tests at every level of an axis or fixes it")
    return tuple(axes)
