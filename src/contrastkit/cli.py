"""The ``contrastkit`` command.

Each subcommand lives in its own module of :mod:`contrastkit.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code. Modules are discovered automatically, so adding a command
means adding a file. Heavy imports belong inside ``func``, so ``--help`` stays instant.

One rule for how the command line is written (:mod:`contrastkit.commands._spelling`): a
pretraining run's settings, the keys of its config.yaml, are ``key=value`` (``pretrain
epochs=5``); everything else is an option, ``--name`` (``evaluate RUN --knn-k 5``). A word a
command does not take is one line that says what to write instead (``pretrain --epochs 5``:
``write epochs=5``), with exit status 2.

Before a command runs, OpenMP's waiting threads are told to sleep rather than spin
(:func:`contrastkit.threads.quiet_openmp`), for this process and every process it starts.

Errors: a ``ValueError`` (bad input) prints ``contrastkit COMMAND: error: ...`` and exits with
2, and so does a missing optional package (one line naming the extra that installs it); an
``OSError`` that no command turned into a message (permission denied, disk full, a missing
file) prints one line and exits with 1, as does a file that cannot be read or written for the
file system's reason (:class:`~contrastkit.files.FileAccessError`: an unreadable image, an output
folder without write permission, a full disk) or a run folder in use by another run
(:class:`~contrastkit.files.RunFolderError`), each a ``ValueError`` to the Python API. SIGINT
(Ctrl-C) or SIGTERM stops a command with one line (``contrastkit COMMAND: stopped``, and what
to do next where the command says it with ``set_defaults(on_stop=...)``) and exit status 128 +
the signal's number.
``--traceback`` (or ``CONTRASTKIT_DEBUG=1`` in the environment) lets all of these propagate
with their traceback instead; any other exception is a bug and always shows its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from . import __version__, commands
from .commands._spelling import RULE, option_strings, unrecognized
from .files import FileAccessError
from .interrupts import Stopped, sigterm_stops, stop_signal
from .threads import quiet_openmp

#: The optional packages a command may need, by the module whose import fails without them:
#: the name to ``pip install`` and the extra of contrastkit that installs it.
EXTRAS = {"sklearn": ("scikit-learn", "train"), "yaml": ("pyyaml", "train"),
          "matplotlib": ("matplotlib", "train"), "rich": ("rich", "train"),
          "torchvision": ("torchvision", "train"), "tensorboard": ("tensorboard", "train"),
          "mlxtend": ("mlxtend", "data"), "submitit": ("submitit", "launch"),
          "lightning": ("lightning", "lightning"), "wandb": ("wandb", "wandb")}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contrastkit",
        description="Contrastive losses, embedding geometry, theory and training.",
        epilog=f"How to write a command: {RULE}. `contrastkit COMMAND --help` lists a "
               f"command's options (and pretrain's, the settings with their defaults).",
    )
    parser.add_argument("--version", action="version", version=f"contrastkit {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show the full Python traceback of an error instead of one line (also: "
        "CONTRASTKIT_DEBUG=1)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{info.name}").register(subparsers)
    for command in subparsers.choices.values():
        _carry_own_parser(command)
    return parser


def _carry_own_parser(parser: argparse.ArgumentParser) -> None:
    """Let the arguments that ``parser`` (a command, or an experiment of one) parses carry it
    as ``own_parser``, so that a word it does not take is explained in its terms."""
    parser.set_defaults(own_parser=parser)
    for action in parser._actions:  # argparse's own table; a nested command's defaults win
        if isinstance(action, argparse._SubParsersAction):
            for nested in action.choices.values():
                _carry_own_parser(nested)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args, extras = parser.parse_known_args(words)
    if extras and getattr(args, "own_parser", None) is None:
        parser.parse_args(words)  # no command to explain it: argparse's usage error
    if extras:
        print(f"{args.own_parser.prog}: error: {_not_taken(args, extras[0], words)}",
              file=sys.stderr)
        return 2
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    quiet_openmp()  # before the command imports torch: waiting threads sleep, never spin
    if args.traceback or os.environ.get("CONTRASTKIT_DEBUG", "") not in ("", "0"):
        with sigterm_stops():
            return int(args.func(args) or 0)
    try:
        with sigterm_stops():
            return int(args.func(args) or 0)
    except FileAccessError as error:  # the file system's fault (a full disk), not the input's
        print(f"contrastkit {args.command}: error: {error}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"contrastkit {args.command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"contrastkit {args.command}: error: {_describe(error)}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as error:
        missing = _missing_extra(error)
        if missing is None:
            raise
        print(f"contrastkit {args.command}: error: {missing}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Stopped) as stop:
        hint = getattr(args, "on_stop", None)
        print(f"contrastkit {args.command}: stopped" + (f"; {hint}" if hint else ""),
              file=sys.stderr)
        number = stop_signal(stop)
        assert number is not None  # KeyboardInterrupt and Stopped carry their signal
        return 128 + number


def _not_taken(args: argparse.Namespace, word: str, words: list[str]) -> str:
    """The error for ``word`` of the command line ``words``, which the command of ``args``
    does not take (:func:`~contrastkit.commands._spelling.unrecognized`)."""
    index = words.index(word)
    following = words[index + 1] if index + 1 < len(words) else None
    command = args.own_parser.prog.removeprefix("contrastkit ")
    settings: dict = getattr(args, "run_settings", dict)()
    return unrecognized(command, word, following, option_strings(args.own_parser), settings)


def _missing_extra(error: ModuleNotFoundError) -> str | None:
    """What to install for the optional package that ``error`` misses; ``None`` when the
    module is not one of :data:`EXTRAS` (a bug, which keeps its traceback)."""
    module = (error.name or "").partition(".")[0]
    if module not in EXTRAS:
        return None
    package, extra = EXTRAS[module]
    return (f"this needs {package}, which is not installed: pip install "
            f"'contrastkit[{extra}]' (or pip install {package})")


def _describe(error: OSError) -> str:
    """``strerror: filename`` for an OSError from the file system, else its message."""
    if error.strerror and error.filename is not None:
        return f"{error.strerror}: {error.filename}"
    return str(error) or type(error).__name__


if __name__ == "__main__":
    raise SystemExit(main())
