"""``contrastkit reproduce RECIPE``: run a recipe's cells and report our numbers beside the
paper's, with a verdict for each of its claims; ``contrastkit reproduce --list``;
``--regenerate DIR`` (the summary, report and figures again from results.csv and run.json)
and ``--publish OUT DEST`` (copy a sweep's evidence folder)."""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

TIERS = ("quick", "cpu", "paper")
#: The most seeds per cell (:data:`contrastkit.experiments.runner.MAX_SEEDS`; kept here too so
#: that ``--help`` imports nothing heavy).
MAX_SEEDS = 1000


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="reproduce a paper's table or figure from a recipe, with a verdict per claim",
        description=(
            "Run every cell of a recipe's tier (a grid of pretraining runs or simulations x "
            "seeds), each an ordinary run folder under OUT/cells/: a finished cell is skipped "
            "and an interrupted one resumed, so a killed sweep restarted loses nothing. Then "
            "write OUT/results.csv (one row per cell x seed x metric), OUT/summary.csv (mean "
            "and 95 % interval over seeds) and OUT/report.md (the paper's values beside ours, "
            "figures, and the verdict of every claim from a paired test over seeds), with "
            "OUT/run.json, the record of the run (code, machine, command, times, and the "
            "recipe as it was loaded). --publish OUT DEST copies the evidence (those files "
            "and the few small cell files the figures read) to DEST, and --regenerate DIR "
            "writes DIR's summary, report and figures again from its results.csv and run.json "
            "(and those cell files). Progress goes to standard error."
        ),
    )
    parser.add_argument("recipe", metavar="RECIPE", nargs="?",
                        help="a shipped recipe (see --list), e.g. similarities/table1, or the "
                             "path of a recipe YAML file")
    parser.add_argument("--all", action="store_true",
                        help="every shipped recipe that has the tier, as one resumable sweep "
                             "(one progress line; each report written when its recipe "
                             "finishes); --out is then the root of the recipes' folders "
                             "(default: runs/reproduce)")
    parser.add_argument("--list", action="store_true",
                        help="list the shipped recipes with their tiers and wall times (measured "
                             "where the tier has run, else the recipe's estimate)")
    parser.add_argument("--regenerate", metavar="DIR", type=Path, default=None,
                        help="write DIR/summary.csv, DIR/report.md and the figures again from "
                             "DIR/results.csv and DIR/run.json (a sweep or evidence folder; the "
                             "recipe is the run record's snapshot; a record that disagrees with "
                             "the results is refused) and, for the figures drawn from the "
                             "cells' files, the few files under DIR/cells/ that --publish "
                             "keeps (a figure whose files are gone is said not to be redrawn); "
                             "runs nothing")
    parser.add_argument("--publish", nargs=2, metavar=("OUT", "DEST"), type=Path,
                        default=None,
                        help="copy the evidence of the finished sweep OUT to DEST (e.g. "
                             "docs/reproduction/<recipe>-<tier>): results.csv, run.json, "
                             "summary.csv, report.md, the figures and the small cell files "
                             "they read, never a checkpoint; DEST must be new, empty or an "
                             "earlier evidence folder")
    parser.add_argument("--tier", choices=TIERS, default="quick",
                        help="quick: about a minute on 2 CPU cores; cpu: the CPU "
                             "reproduction, up to about an hour; paper: the paper's setting, "
                             "for GPUs (default: quick)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: runs/reproduce/<recipe with / replaced "
                             "by ->/<tier>, e.g. runs/reproduce/similarities-table1/quick); "
                             "new, empty, or the folder of this sweep, which continues")
    parser.add_argument("--overwrite", action="store_true",
                        help="write the sweep into an --out folder that holds other files: "
                             "its results.csv, run.json, summary.csv, report.md and figures "
                             "there are replaced, nothing else is touched")
    parser.add_argument("--jobs", type=int, default=1,
                        help="cells run at once, in parallel processes sharing the CPU threads "
                             "(default: 1)")
    parser.add_argument("--seeds", type=int, default=None,
                        help=f"seeds per cell, at most {MAX_SEEDS} (default: the tier's)")
    parser.add_argument("--launcher", choices=("local", "submitit"), default="local",
                        help="local processes (default), or one submitit job per cell (SLURM "
                             "on a cluster; needs pip install 'contrastkit[launch]')")
    parser.add_argument("--data-dir", default=None,
                        help="where the datasets' files are (default: the recipe's, else "
                             "./data)")
    parser.add_argument("--dry-run", action="store_true",
                        help="build and check every cell without running it; print the cell "
                             "count and the estimated time")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show cells done / total, the running cells and an ETA (default: on)")
    parser.set_defaults(func=run, on_stop="rerun the same command to resume")


def run(args: argparse.Namespace) -> int:
    """The command; a sweep folder that is not one is named with the command line's words,
    and a file the sweep cannot write (a full disk) is one line and exit status 1."""
    from contrastkit.experiments.sweep_folder import NotASweepFolder
    from contrastkit.files import RunFolderError
    from contrastkit.train.run_folder import RunFolderInUse

    try:
        return _run(args)
    except NotASweepFolder as error:
        raise ValueError(error.advice("--out", "--overwrite")) from None
    except RunFolderInUse as error:  # a cell locked by another sweep writing into --out
        raise RunFolderError(error.advice("--out")) from None
    except RunFolderError as error:
        if not isinstance(error.__cause__, OSError):
            raise
        print(f"contrastkit reproduce: error: {error}; the finished cells are kept: rerun the "
              f"same command when it can be written", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    if args.regenerate is not None or args.publish is not None:
        return _evidence(args)
    if args.all:
        if args.recipe is not None:
            raise ValueError(f"--all runs every recipe; drop RECIPE ({args.recipe})")
        return _run_all(args)
    if args.recipe is None:
        raise ValueError("RECIPE is required (or --all for every recipe, --list to see them)")
    from contrastkit.experiments import reproduce

    done = reproduce(args.recipe, tier=args.tier, out=args.out, jobs=args.jobs,
                     seeds=args.seeds, launcher=args.launcher, dry_run=args.dry_run,
                     progress=args.progress, data_dir=args.data_dir, overwrite=args.overwrite)
    if done.dry_run:
        print(f"{len(done.cells)} cells ({_cell_points(done.cells)} grid points x seeds) of "
              f"{args.recipe} ({args.tier}) are valid; estimated "
              f"{_minutes(done.estimate_minutes)}; nothing was run")
        return 0
    _print_outcome(done)
    return 0


def _run_all(args: argparse.Namespace) -> int:
    from contrastkit.experiments import reproduce_all

    everything = reproduce_all(tier=args.tier, out=args.out, jobs=args.jobs, seeds=args.seeds,
                               launcher=args.launcher, dry_run=args.dry_run,
                               progress=args.progress, data_dir=args.data_dir,
                               overwrite=args.overwrite)
    if everything[0].dry_run:
        cells = sum(len(done.cells) for done in everything)
        minutes = sum(done.estimate_minutes for done in everything)
        print(f"{cells} cells of {len(everything)} recipes ({args.tier}) are valid; estimated "
              f"{_minutes(minutes)}; nothing was run")
        return 0
    for done in everything:
        print(f"== {done.out}")
        _print_outcome(done)
    return 0


def _evidence(args: argparse.Namespace) -> int:
    """--regenerate DIR or --publish OUT DEST (alone: they run no recipe)."""
    flag = "--regenerate" if args.regenerate is not None else "--publish"
    if args.regenerate is not None and args.publish is not None:
        raise ValueError("--regenerate and --publish do different things; give one")
    if args.recipe is not None or args.all:
        extra = args.recipe if args.recipe is not None else "--all"
        raise ValueError(f"{flag} runs no recipe; drop {extra}")
    from contrastkit.experiments.reproduce import publish, regenerate

    if args.regenerate is not None:
        done = regenerate(args.regenerate)
        for verdict in done.verdicts:
            print(_verdict_line(verdict))
        _print_not_drawn(done, "not redrawn")
        print(f"regenerated from {done.out / 'results.csv'} and {done.out / 'run.json'}: "
              f"{done.out / 'summary.csv'}, {done.report_path}")
        return 0
    out, dest = args.publish
    written = publish(out, dest)
    names = [path.relative_to(dest).as_posix() for path in written]
    figures = [name for name in names if name.endswith(".png") and "/" not in name]
    cells = [name for name in names if name.startswith("cells/")]
    size = sum(path.stat().st_size for path in written)
    print(f"published {len(written)} files ({size / 1024:.0f} KiB) to {dest}: results.csv, "
          f"run.json, summary.csv, report.md, {len(figures)} figure(s), {len(cells)} cell "
          f"file(s)")
    print(f"check: contrastkit reproduce --regenerate {shlex.quote(str(dest))}")
    return 0


def _print_outcome(done) -> None:
    for verdict in done.verdicts:
        print(_verdict_line(verdict))
    _print_not_drawn(done, "not drawn")
    print(f"results: {done.out / 'results.csv'}, {done.out / 'summary.csv'}")
    print(f"report: {done.report_path}")


def _print_not_drawn(done, what: str) -> None:
    """A line for each figure of the report left out for want of the cells' files, saying
    whether an earlier drawing of it is left beside the report, no longer shown."""
    for kind, why in done.figures_not_drawn.items():
        earlier = done.out / f"{kind}.png"
        left = (f"; {earlier}, drawn earlier, is left as it was and the report no longer shows "
                f"it" if earlier.is_file() else "")
        print(f"{what}: {kind}: {why.words(f' in {done.out}')}{left}")


def _list() -> int:
    from contrastkit.experiments import load_recipe, recipe_names

    names = recipe_names()
    if not names:
        print("no recipes are shipped")
    for name in names:
        recipe = load_recipe(name)
        tiers = ", ".join(_tier_time(tier_name, tier)
                          for tier_name, tier in recipe.tiers.items())
        print(f"{name}: {tiers}\n    {recipe.title}")
    return 0


def _tier_time(name: str, tier) -> str:
    """``cpu 38 min (measured: 2 cores, --jobs 2)`` for a tier that has run, else
    ``paper ~45 h`` (the recipe's estimate)."""
    if tier.measured is None:
        return f"{name} ~{_minutes(tier.estimate_minutes)}"
    measured = tier.measured
    return (f"{name} {_minutes(measured['minutes'])} (measured: {measured['cores']} cores, "
            f"--jobs {measured['jobs']})")


def _cell_points(cells) -> int:
    return len({cell.cell_id for cell in cells})


def _minutes(minutes: float) -> str:
    """A duration in words, to three figures at most and never in powers of ten: ``0.5`` ->
    ``"30 s"``, ``32.73`` -> ``"32.7 min"``, ``6000`` -> ``"100 h"``, ``200000`` ->
    ``"3,333 h"``."""
    if minutes < 1:
        return f"{round(minutes * 60)} s"
    if minutes < 120:
        return f"{minutes:.3g} min"
    hours = minutes / 60
    return f"{hours:.3g} h" if hours < 100 else f"{hours:,.0f} h"


def _verdict_line(verdict) -> str:
    """``supported       claim_id: text (effect 0.012, d_z 1.3, p 0.004, n 3)``; an
    inconclusive verdict adds its minimum detectable effect (``MDE 0.02``) before ``n``."""
    def number(value) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        return f"{value:.3g}"

    mde = getattr(verdict, "mde", None)
    shown = (f", MDE {number(mde)}" if verdict.verdict == "inconclusive" and mde is not None
             and not (isinstance(mde, float) and math.isnan(mde)) else "")
    return (f"{verdict.verdict:<14} {verdict.claim_id}: {verdict.text} (effect "
            f"{number(verdict.effect)}, d_z {number(verdict.effect_size)}, p "
            f"{number(verdict.p_value)}{shown}, n {verdict.n})")
