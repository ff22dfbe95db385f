"""The values of the config's fields: parsed from the strings of ``key=value`` overrides,
checked against each field's type, and the settings of earlier versions read in today's
terms."""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping

#: ``precision``'s choices (:mod:`.precision` resolves them; it imports torch, this does not).
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(:[0-9]+)?")


def check_device_name(device: str, setting: str) -> None:
    """Raise a ``ValueError`` naming ``setting`` unless ``device`` is ``auto``, ``cpu``,
    ``cuda``, ``cuda:<i>`` or ``mps`` (whether that device exists is checked when a run
    starts)."""
    if not DEVICE_PATTERN.fullmatch(device):
        raise ValueError(f"{setting} must be auto, cpu, cuda, cuda:<index> or mps, "
                         f"got {device!r}")


def parse_value(key: str, value: object, kind: type) -> object:
    """``value`` (a string from the command line, or a value of a YAML file) as the config
    field ``key`` of type ``kind`` holds it; a ``ValueError`` naming ``key`` otherwise."""
    optional = typing.get_args(kind)
    if optional:  # ``float | None``: "none" or "null" unsets it, anything else is a float
        if isinstance(value, str) and value.lower() in ("none", "null", ""):
            return None
        return parse_value(key, value, next(arg for arg in optional if arg is not type(None)))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or kind is str:
        return value
    if kind is bool:
        lowered = value.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"{key} must be true or false, got {value!r}")
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{key} must be {kind.__name__}, got {value!r}") from None


def check_value_type(key: str, value: object, kind: type) -> None:
    """A ``ValueError`` naming ``key`` unless ``value`` is of the field's type ``kind`` (an int
    for a float field is accepted; a bool is never a number)."""
    optional = typing.get_args(kind)
    if optional:
        if value is not None:
            check_value_type(key, value, next(arg for arg in optional if arg is not type(None)))
        return
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        raise ValueError(f"{key} must be {getattr(kind, '__name__', kind)}, "
                         f"got {value!r} ({type(value).__name__})")


def translated_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """``settings`` with the settings of earlier contrastkit versions in today's terms: ``amp``
    (a boolean, CUDA only) as ``precision`` (``true``: ``auto``, ``false``: ``fp32``). Run
    folders, cell records and config files written before the change read as they ran."""
    if "amp" not in settings:
        return dict(settings)
    translated = {key: value for key, value in settings.items() if key != "amp"}
    amp = parse_value("amp", settings["amp"], bool)
    if not isinstance(amp, bool):
        raise ValueError(f"amp must be true or false, got {settings['amp']!r}")
    if "precision" in settings and settings["precision"] != ("auto" if amp else "fp32"):
        raise ValueError(f"amp={settings['amp']} and precision={settings['precision']} "
                         f"disagree; amp is the old name of precision: give precision alone")
    translated.setdefault("precision", "auto" if amp else "fp32")
    return translated
