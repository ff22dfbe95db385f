"""``contrastkit check-loss LOSS``: a loss's gradient under torch.distributed and the rest of
:func:`contrastkit.testing.check_loss`, one PASS/FAIL line per property; exit status 1 when one
fails."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check-loss",
        help="check a loss (yours or a registered one) in 2 and 4 processes and more",
        description=(
            "Check that a loss computes the same thing in every way a training run may call "
            "it: gloo processes on the CPU, each fed its share of a batch, against one process "
            "on the whole batch (values and every process's input gradients); "
            "torch.autograd.gradcheck in float64; chunk_size= against one block; a batch of "
            "one; a NaN input; bfloat16 inputs. One PASS/FAIL line per property with its "
            "largest difference; exit status 1 when a property fails."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("loss", metavar="LOSS",
                        help="module:callable, a ContrastiveLoss subclass or a factory "
                        "(importable from the current folder), e.g. mypkg.losses:MyLoss; or "
                        "a registered loss name such as simclr")
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2, 4], metavar="W",
                        help="the numbers of processes to compare with one process")
    parser.add_argument("--batch-size", type=int, default=8,
                        help="pairs in the batch the processes share (at least 2 per process)")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a constructor argument of the loss (repeatable; the value is "
                        "read as a Python literal), e.g. --setting n=50 for vrns")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contrastkit.testing import check_loss

    settings = dict(_setting(word) for word in args.setting)
    result = check_loss(_loss(args.loss), settings, world_sizes=tuple(args.world_sizes),
                        batch_size=args.batch_size)
    return 0 if result.passed else 1


def _loss(spec: str) -> object:
    """The loss ``spec`` names: ``module:callable`` imported (the current folder first on the
    path), or a registered name as it is."""
    from contrastkit import losses

    module_name, colon, attribute = spec.partition(":")
    if not colon:
        if spec not in losses.names(regularizers=True):
            raise ValueError(f"LOSS must be module:callable (e.g. mypkg.losses:MyLoss) or a "
                             f"registered loss name "
                             f"({', '.join(losses.names(regularizers=True))}), got {spec!r}")
        return spec
    if not module_name or not attribute:
        raise ValueError(f"LOSS must be module:callable such as mypkg.losses:MyLoss, "
                         f"got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise ValueError(f"LOSS {spec!r}: no module named {error.name!r} (LOSS's module must "
                         f"be importable from the current folder or the Python path)") from None
    for name in attribute.split("."):
        if not hasattr(found, name):
            raise ValueError(f"LOSS {spec!r}: {module_name} has no attribute {attribute!r}")
        found = getattr(found, name)
    return found


def _setting(word: str) -> tuple[str, object]:
    """``NAME=VALUE`` as ``(NAME, value)``: a Python literal, else the text."""
    name, equals, text = word.partition("=")
    if not equals or not name.isidentifier():
        raise ValueError(f"--setting must be NAME=VALUE such as n=50, got {word!r}")
    try:
        return name, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return name, text
