"""The facts of a report's setup, in words, from the run record alone: what ran and how long it
trained, the code that trained each run, the invocations, the packages, the machine, the CPU
and the data's checksums. A fact the record does not hold (a record written before it was
recorded) is ``None``, which the report shows as "not recorded"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

#: The hex digits of a commit or a checksum shown in a report (run.json keeps them whole).
SHORT = 12


def setup_facts(recipe, tier, rows: Sequence[dict], run_info: Mapping
                ) -> list[tuple[str, str | None]]:
    """The setup table's rows, ``(name, words or None)``, in the report's order; last, where
    the record has ``amended`` (what was added to or corrected in it after its run, each in
    words), those amendments."""
    seeds = sorted({row["seed"] for row in rows})
    fixed = run_info.get("fixed") or getattr(recipe, "fixed", None)
    runs = [run for run in run_info.get("cell_runs") or [] if isinstance(run, Mapping)]
    amended = run_info.get("amended")
    return [
        ("recipe", f"`{recipe.name}`"),
        ("tier", f"`{getattr(tier, 'name', tier)}`"),
        ("data", run_info.get("data")),
        ("datasets", _datasets_words(run_info.get("datasets"))),
        ("held fixed", _fixed_words(fixed)),
        ("cells", f"{len({row['cell'] for row in rows})} x {len(seeds)} seeds"),
        ("trained", _trained_words(run_info.get("schedule"))),
        ("command", f"`{run_info['command']}`" if run_info.get("command") else None),
        ("code", _code_words(run_info)),
        ("runs trained by", _trained_by_words(runs)),
        ("packages", _packages_words(run_info.get("packages"))),
        ("machine", run_info.get("machine")),
        ("CPU", _cpu_words(run_info.get("cpu"), runs)),
        ("started", run_info.get("started")),
        ("wall time", _duration(run_info.get("seconds"), "this invocation; cells finished "
                                                         "by an earlier one cost it nothing")),
        ("invocations", _invocations_words(run_info.get("invocations"))),
        ("cell time", _duration(run_info.get("cell_seconds"), "every cell's own run time, "
                                                              "summed over cells and jobs")),
        *([("record amended", "; ".join(map(str, amended)))] if amended else []),
    ]


def _code_words(run_info: Mapping) -> str | None:
    """``contrastkit 0.1.0, commit 0123456789ab (with uncommitted changes), Python 3.12.3``."""
    version = run_info.get("contrastkit")
    if not version:
        return None
    commit = run_info.get("commit")
    words = f"contrastkit {version}, " + (f"commit {commit[:SHORT]}" if commit
                                          else "not a git checkout")
    if commit and run_info.get("source_dirty"):
        words += " with uncommitted changes"
    if run_info.get("python"):
        words += f", Python {run_info['python']}"
    return words


def _fixed_words(fixed) -> str | None:
    words = {"steps": "the number of optimizer steps (epochs vary with the batch size)",
             "epochs": "the number of epochs (optimizer steps vary with the batch size)"}
    return words.get(fixed, fixed)


def _duration(seconds, what: str) -> str | None:
    """``seconds`` in words, with ``what`` they count in brackets."""
    if seconds is None:
        return None
    return f"{_short_duration(seconds)} ({what})"


def _trained_words(schedule) -> str | None:
    """What the runs trained, from the record's schedule: ``200 epochs (1000 to 8800 optimizer
    steps) per run``."""
    if not isinstance(schedule, Mapping):
        return None
    plans = [plan for plan in schedule.values() if isinstance(plan, Mapping)]
    parts = [_span([plan.get(what) for plan in plans], what)
             for what in ("epochs", "steps")]
    parts = [part for part in parts if part]  # each a str now
    if not parts:
        return None
    if len(parts) == 2:
        return f"{parts[0]} ({str(parts[1]).replace('steps', 'optimizer steps')}) per run"
    return f"{parts[0]} per run"


def _span(values: list, what: str) -> str | None:
    """``200 epochs`` or ``1000 to 8800 steps`` (``None`` when no value is recorded)."""
    known = sorted({value for value in values if isinstance(value, (int, float))})
    if not known:
        return None
    if len(known) == 1:
        return f"{known[0]:g} {what if known[0] != 1 else what[:-1]}"
    return f"{known[0]:g} to {known[-1]:g} {what}"


def _trained_by_words(runs: Sequence[Mapping]) -> str | None:
    """The commits that trained the runs, each with its count of runs, and the runs whose
    result does not record one; ``None`` when no run records its commit."""
    if not any("commit" in run for run in runs):
        return None
    counts = Counter((run.get("commit"), bool(run.get("source_dirty"))) for run in runs)
    parts = []
    for (commit, dirty), count in sorted(counts.items(), key=lambda item: str(item[0])):
        what = _runs_words(count)
        if commit is None:
            parts.append(f"{what}: not recorded")
        else:
            parts.append(f"{what}: commit {commit[:SHORT]}"
                         + (" with uncommitted changes" if dirty else ""))
    return "; ".join(parts)


def _packages_words(found) -> str | None:
    """``torch 2.3.0, numpy 1.26.4, ..., mlxtend not installed``."""
    if not isinstance(found, Mapping) or not found:
        return None
    return ", ".join(f"{name} {version}" if version != "not installed"
                     else f"{name} not installed" for name, version in found.items())


def _cpu_words(cpu, runs: Sequence[Mapping]) -> str | None:
    """The CPU's model, its logical cores and the threads a run computed with (these from the
    runs when the record has no ``cpu``)."""
    cpu = cpu if isinstance(cpu, Mapping) else {}
    threads = cpu.get("threads") or sorted({run["threads"] for run in runs
                                            if isinstance(run.get("threads"), int)})
    parts = [f"{cpu['model']}" if cpu.get("model") else
             ("model not recorded" if cpu or threads else None),
             f"{cpu['logical_cores']} logical cores" if cpu.get("logical_cores") else None,
             (f"{' or '.join(map(str, threads))} thread{'s' if threads != [1] else ''} per "
              f"run") if threads else None]
    words = ", ".join(part for part in parts if part)
    return words or None


def _invocations_words(invocations) -> str | None:
    """Each invocation that wrote the record: when, the commit, the runs it finished and
    their time, its wall time."""
    if not isinstance(invocations, list) or not invocations:
        return None
    parts = []
    for one in invocations:
        if not isinstance(one, Mapping):
            continue
        commit = one.get("commit")
        parts.append(f"{one.get('started')}, "
                     + (f"commit {commit[:SHORT]}" if commit else "not a git checkout")
                     + f", {_runs_words(one.get('runs'))} finished in "
                     + _short_duration(one.get("cell_seconds"))
                     + f" of cells, {_short_duration(one.get('seconds'))} of wall time")
    return f"{len(parts)}: " + "; ".join(parts)


def _runs_words(count) -> str:
    return "an unrecorded number of runs" if not isinstance(count, int) else \
        f"{count} run{'s' if count != 1 else ''}"


def _short_duration(seconds) -> str:
    """``12.5 s`` or ``3 min 4 s``."""
    if not isinstance(seconds, (int, float)):
        return "an unrecorded time"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)  # whole seconds first: never "3 min 60 s"
    return f"{minutes} min {rest} s"


def _datasets_words(datasets) -> str | None:
    """``digits: test sha256:0123456789ab, train sha256:...``; none read: said so."""
    if not isinstance(datasets, Mapping):
        return None
    if not datasets:
        return "none read from files (the data are drawn or built by the runs)"
    parts = []
    for name, splits in datasets.items():
        sums = ", ".join(f"{split} {_short_sum(value)}" for split, value in
                         (splits.items() if isinstance(splits, Mapping) else []))
        parts.append(f"{name}: {sums}")
    return "; ".join(parts) + " (sha256 of each split's arrays as loaded; run.json has them " \
                              "whole)"


def _short_sum(value) -> str:
    text = str(value)
    return text[:len("sha256:") + SHORT] if text.startswith("sha256:") else text
