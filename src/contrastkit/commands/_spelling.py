"""The one rule of how the command line is written, and what to write instead of a word that
breaks it.

The rule (:data:`RULE`): a pretraining run's settings, the keys of its config.yaml, are written
``key=value`` with underscores (``contrastkit pretrain epochs=5 data_dir=data``); everything
else a command takes is an option, written ``--name`` with dashes (``contrastkit evaluate RUN
--knn-k 5``, ``contrastkit reproduce RECIPE --data-dir data``, ``pretrain --resume``). Only
``pretrain`` takes settings: the other commands read a run's settings from its folder, or a
sweep's from its recipe.

:func:`unrecognized` words the error for a word a command does not take: a setting written as
an option (``pretrain --epochs 5``: write ``epochs=5``), an option written as a setting
(``evaluate RUN knn_k=5``: write ``--knn-k 5``), or a misspelt option (the closest one).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Mapping

RULE = ("a run's settings are key=value (pretrain epochs=5), a command's options are --flags "
        "(evaluate --knn-k 5)")


def unrecognized(command: str, word: str, following: str | None,
                 options: Mapping[str, bool], settings: Mapping[str, object]) -> str:
    """The error for ``word``, which ``contrastkit command`` does not take, followed on the
    command line by ``following`` (``None`` at the end). ``options`` maps the command's option
    strings to whether each takes a value; ``settings`` maps the run settings the command takes
    (none but pretrain's) to their defaults."""
    if word.startswith("-"):
        flag, _, inline = word.partition("=")
        key = flag.lstrip("-").replace("-", "_")
        if key in settings:
            value = inline or _value_of(following, settings[key])
            return f"{flag} is not an option of {command}: {RULE}; write {key}={value}"
        return f"unknown option {flag}" + _closest(flag, options, command)
    key, equals, value = word.partition("=")
    if equals and not settings:
        flag = "--" + key.replace("_", "-")
        if flag in options:
            written = f"{flag} {value}" if options[flag] else flag
            return (f"{word}: {command} takes no run settings: {RULE}; write {written}")
        return (f"{word}: {command} takes no run settings ({RULE})"
                + _closest(flag, options, command))
    return f"unexpected argument {word!r}; see contrastkit {command} --help"


def option_strings(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """``parser``'s option strings, each mapped to whether it takes a value."""
    return {string: action.nargs != 0 for action in parser._actions  # argparse's own table
            for string in action.option_strings}


def _value_of(following: str | None, default: object) -> str:
    """The value that ``--key`` was followed by, or a placeholder (``true`` for a switch)."""
    if following is not None and not following.startswith("-") and "=" not in following:
        return following
    return "true" if isinstance(default, bool) else "<value>"


def _closest(flag: str, options: Iterable[str], command: str) -> str:
    """``; did you mean --knn-k?`` for the option closest to ``flag`` (by their names without
    dashes), or where the options are listed."""
    names = {option.lstrip("-"): option for option in options if option.startswith("--")}
    close = difflib.get_close_matches(flag.lstrip("-"), names, n=1, cutoff=0.8)  # a typo
    if close:
        return f"; did you mean {names[close[0]]}?"
    return f"; see contrastkit {command} --help for the options"
