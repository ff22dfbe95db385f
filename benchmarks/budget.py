"""The reproduction budget: for every recipe with a cpu tier, its cells, seeds, optimizer steps
and wall time on 2 cores, as its run record gives them now and as its cpu-tier report committed
at --before (default c38e9af, before the training loop's throughput work) gave them, and the
totals.

    python -m benchmarks.budget                    # from the repository's root
    python path/to/benchmarks/budget.py            # from any folder

"After" is read from the run record (``run.json``) of each recipe's cpu-tier sweep: by default
the committed evidence under the repository's docs/reproduction (``<recipe>-cpu``), or, with
``--runs``, the output of ``contrastkit reproduce --all --tier cpu --jobs 2`` (``<recipe>/cpu``);
the wall time is the cells' own seconds summed and divided by the jobs that ran them (one
thread each), which stays right when a sweep was stopped and resumed. A record that cannot be
read (not JSON, a key missing, ``--jobs 0``) is one line naming the file and what is wrong
(exit status 2). "Before" is read from the cpu-tier reports committed at ``--before`` (the
commit before that work, read from the repository's git history: left blank where it is not
there), which give their cells, seeds, steps and wall and cell times as measured then (on 2
cores, some shared with other work, as each report says); its total counts each tier's wall
time or, for a report written by a resumed sweep (whose wall time is only its last call's),
half its cells' time. Writes the ``budget`` section of docs/benchmarks.md with
``--write-docs``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

#: The repository's root: where git, docs/reproduction and the benchmarks package are.
ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file (python path/to/benchmarks/budget.py)
    sys.path.insert(0, str(ROOT))

from benchmarks._report import add_write_docs_flag, publish  # noqa: E402

BEFORE = "c38e9af"
#: Each recipe's cpu-tier report at the commit before this work.
BEFORE_REPORTS = {
    "similarities/table1": "docs/reproduction/similarities-table1-cpu.md",
    "similarities/fig2": "docs/reproduction/similarities-fig2-cpu.md",
    "similarities/fig3": "docs/reproduction/similarities-fig3-cpu.md",
    "similarities/fig4": "docs/reproduction/similarities-fig4-cpu.md",
    "similarities/table4": "docs/reproduction/similarities-table4-cpu.md",
    "similarities/table5": "docs/reproduction/similarities-table5-cpu.md",
    "beyond/vrns-vs-large-batch": "docs/reproduction/beyond-vrns-vs-large-batch/report.md",
}
for _name in ("hardneg/beta", "hardneg/bounds", "hardneg/fig2", "lmcl/fig2", "lmcl/fig3",
              "lmcl/table1", "lmcl/table2", "lmcl/table3", "sigmoid/fig1", "sigmoid/fig2",
              "sigmoid/fig3"):
    BEFORE_REPORTS[_name] = f"docs/reproduction/{_name.replace('/', '-')}/report.md"
TARGET_MINUTES, TOTAL_TARGET_HOURS = 45, 6


def _minutes(text: str) -> float | None:
    """``"53 min 18 s"`` / ``"1 h 7 min"`` / ``"0.3 s"`` -> minutes."""
    hours = re.search(r"(\d+) h", text)
    minutes = re.search(r"(\d+) min", text)
    seconds = re.search(r"([\d.]+) s\b", text)
    if not (hours or minutes or seconds):
        return None
    return ((int(hours.group(1)) * 60 if hours else 0) + (int(minutes.group(1)) if minutes
            else 0) + (float(seconds.group(1)) / 60 if seconds else 0))


def before(name: str, commit: str) -> dict:
    """Cells, seeds, steps, wall and cell minutes of ``name``'s cpu report at ``commit``."""
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show",
                               f"{commit}:{BEFORE_REPORTS[name]}"],
                              capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError, KeyError):
        return {}
    found = {}
    cells = re.search(r"\| cells \| (\d+) x (\d+) seeds", text)
    if cells:
        found.update(cells=int(cells.group(1)), seeds=int(cells.group(2)))
    for key, label in (("wall", "wall time"), ("cell", "cell time")):
        line = re.search(rf"\| {label} \| ([^|(]+)", text)
        if line:
            found[key] = _minutes(line.group(1))
    steps = [int(s) for s in re.findall(r"^\| [^|]+ \| (\d+) \| \d+ \|$", text, re.M)]
    if steps:
        found["steps"] = (min(steps), max(steps))
        # the report lists each cell's steps once; every seed trains them
        found["total_steps"] = sum(steps) * found.get("seeds", 1)
    return found


#: What :func:`after` reads of a run record: the type of each key, in words.
AFTER_KEYS = {"command": (str, "the command line"), "cells": (int, "a number of cells"),
              "seeds": (list, "a list of seeds"), "cell_runs": (list, "a list of runs"),
              "cell_seconds": ((int, float), "a number of seconds >= 0")}


def after(folder: Path) -> dict:
    """Cells, seeds, steps and wall minutes (cell seconds / jobs) of a cpu sweep folder; a
    ``ValueError`` naming its run.json says what it lacks."""
    path = folder / "run.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path} holds {type(record).__name__}, not a run record")
    for key, (kind, words) in AFTER_KEYS.items():
        if key not in record:
            raise ValueError(f"{path} lacks {key}: not the record of a finished sweep")
        value = record[key]
        if not isinstance(value, kind) or isinstance(value, bool) or (
                key == "cell_seconds" and not value >= 0):
            raise ValueError(f"{path}: {key} must be {words}, got {value!r}")
    if not all(isinstance(run, dict) for run in record["cell_runs"]):
        raise ValueError(f"{path}: cell_runs must be a list of runs (mappings)")
    jobs = _jobs(record["command"], path)
    steps = [run["steps"] for run in record["cell_runs"] if isinstance(run.get("steps"), int)]
    return {"cells": record["cells"], "seeds": len(record["seeds"]),
            "steps": (min(steps), max(steps)) if steps else None, "total_steps": sum(steps),
            "jobs": jobs, "wall": record["cell_seconds"] / jobs / 60}


def _jobs(command: str, path: Path) -> int:
    """The ``--jobs`` of a recorded command line (1 without it)."""
    found = re.search(r"--jobs[= ](\S+)", command)
    if found is None:
        return 1
    if not re.fullmatch(r"[0-9]+", found.group(1)) or int(found.group(1)) < 1:
        raise ValueError(f"{path}: its command runs --jobs {found.group(1)}; expected a whole "
                         f"number of jobs >= 1")
    return int(found.group(1))


def _steps(value) -> str:
    if not value:
        return "—"
    low, high = value
    return f"{low}" if low == high else f"{low}-{high}"


def _time(minutes) -> str:
    return "—" if minutes is None else f"{minutes:.0f} min" if minutes >= 1 else "< 1 min"


def _speedup(old: dict, new: dict, old_minutes: float) -> str:
    """How many times less 2-core wall time an optimizer step takes after than before."""
    if not (old.get("total_steps") and new.get("total_steps") and old_minutes and new["wall"]):
        return "—"
    return f"{(old_minutes / old['total_steps']) / (new['wall'] / new['total_steps']):.1f}x"


def table(runs: Path, commit: str) -> tuple[str, str]:
    """The budget table and a sentence on the targets, both computed from the records."""
    from contrastkit.experiments import load_recipe, recipe_names
    from contrastkit.experiments.reproduce import default_out

    lines = ["| recipe | before: cells x seeds | before: steps | before: wall (cell time) | "
             "after: cells x seeds | after: steps | after: wall on 2 cores | "
             "time per step, before / after |",
             "|---|---|---|---|---|---|---|---|"]
    total_before = total_after = 0.0
    over, not_run = [], []
    for name in recipe_names():
        if "cpu" not in load_recipe(name).tiers:
            continue
        old = before(name, commit)
        sweep = default_out(name, "cpu", runs)  # reproduce --all's <recipe>/cpu
        folders = [sweep, runs / f"{sweep.parent.name}-cpu"]  # published: <recipe>-cpu
        new = next((after(f) for f in folders if (f / "run.json").is_file()), {})
        old_time = old.get("wall")
        # a report written by a resumed sweep gives only its last call's wall time: then half
        # its cells' time (2 cores) is the better account of what the tier took
        old_minutes = max(old_time or 0, (old.get("cell") or 0) / 2)
        total_before += old_minutes
        total_after += new.get("wall") or 0
        if not new:
            not_run.append(name)
        elif new["wall"] > TARGET_MINUTES:
            over.append(f"`{name}` ({new['wall']:.0f} min)")
        cell_time = f" ({_time(old['cell'])})" if old.get("cell") else ""
        lines.append(
            f"| `{name}` | {old.get('cells', '—')} x {old.get('seeds', '—')} | "
            f"{_steps(old.get('steps'))} | {_time(old_time)}{cell_time} | "
            f"{new.get('cells', '—')} x {new.get('seeds', '—')} | {_steps(new.get('steps'))} | "
            f"{_time(new.get('wall')) if new else 'not run'} | {_speedup(old, new, old_minutes)} |")
    lines.append(f"| **total** | | | **{total_before / 60:.1f} h** | | | "
                 f"**{total_after / 60:.1f} h** | |")
    verdict = (f"Against the target: the total is {total_after / 60:.1f} h "
               f"({'within' if total_after <= TOTAL_TARGET_HOURS * 60 else 'over'} "
               f"{TOTAL_TARGET_HOURS} h); "
               + (f"{len(over)} tiers take more than {TARGET_MINUTES} min: {', '.join(over)}"
                  if over else f"every tier run takes at most {TARGET_MINUTES} min")
               + (f"; not run yet: {', '.join(f'`{n}`' for n in not_run)}." if not_run else "."))
    return "\n".join(lines), verdict


PUBLISHED = Path("docs") / "reproduction"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.budget",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=PUBLISHED,
                        help="the published cpu tiers (default: the repository's "
                             f"{PUBLISHED.as_posix()}) or the root of the sweeps (reproduce "
                             "--all's --out)")
    parser.add_argument("--before", default=BEFORE, help="the commit of the 'before' reports")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    runs = ROOT / PUBLISHED if args.runs == PUBLISHED else args.runs
    if not runs.is_dir():
        parser.exit(2, f"{parser.prog}: error: --runs {runs} is not a folder\n")
    try:
        rows = table(runs, args.before)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    markdown = "\n\n".join([
        f"Command: `python -m benchmarks.budget --runs {args.runs.as_posix()}` (after: the run "
        f"records of `contrastkit reproduce --all --tier cpu --jobs 2`, as published beside "
        f"each report; before: the cpu-tier reports "
        f"committed at {args.before}). Target: every cpu tier within {TARGET_MINUTES} min on 2 "
        f"cores, all of them within {TOTAL_TARGET_HOURS} h.",
        *rows])
    publish("budget", markdown, args.write_docs)


if __name__ == "__main__":
    main()
