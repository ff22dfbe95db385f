"""The run record (``run.json``) of a sweep, built when its last cell has finished: what ran,
with which code, software, machine and data, in which invocations and how long; the report's
setup reads it (:func:`run_record`, whose text lists the fields)."""

from __future__ import annotations

import json
import os
import platform
import shlex
import warnings
from datetime import datetime
from pathlib import Path

from .cell_folders import is_finished, key, read_result
from .evidence import RECORD_FORMAT, RUN_JSON, as_json, recipe_content, source_commit
from .kinds import CELL_KINDS
from .provenance import cpu, dataset_checksums, packages, relative
from .recipe import Cell, Recipe


def finished_cells(cells: list[Cell], out: str | Path) -> set[tuple[str, int]]:
    """The keys of the ``cells`` already finished in ``out`` (read before an invocation runs
    its cells: the others are the ones it trains)."""
    return {key(cell) for cell in cells if is_finished(cell, out)}


def run_record(recipe: Recipe, tier: str, out: Path, cells: list[Cell], started: datetime,
               seconds: float, command: str, data_dir: str | None = None,
               finished_before: set[tuple[str, int]] | None = None) -> dict:
    """What run.json records of a sweep, in JSON's types; the report's setup reads it.

    ``recipe`` (its name), ``recipe_source``, ``tier``, ``command`` (the ``contrastkit
    reproduce`` command line, its paths relative: :func:`~.provenance.relative`), ``started``
    and ``seconds`` (the wall time of this invocation: cells finished by an earlier one cost it
    nothing), ``cell_seconds`` (the summed time of all cells, whichever invocation ran them),
    ``invocations`` (those that wrote this folder's record, oldest first, this one last: each
    its ``started``, ``seconds``, ``commit``, ``source_dirty``, the ``runs`` it finished and
    their ``cell_seconds``; ``finished_before`` holds the keys of the cells finished before
    this one started, :func:`finished_cells`), ``seeds``, ``cells`` (grid points) and ``runs``
    (cells x seeds); the code and machine: ``contrastkit`` (version), ``commit`` (the source
    tree's git commit, ``None`` when it is not a git checkout) and ``source_dirty`` of this
    invocation, ``python``, ``torch``, ``packages`` (:func:`~.provenance.packages`),
    ``machine``, ``cpu`` (:func:`~.provenance.cpu`); the data: ``data`` in words and
    ``datasets`` (:func:`~.provenance.dataset_checksums`); what the cells did: ``fixed`` (what
    is held fixed across batch sizes), ``schedule`` (cell id -> ``steps``, ``epochs``) and
    ``cell_runs`` (each cell and seed: ``steps``, ``epochs``, ``threads``, ``seconds``,
    ``commit`` and ``source_dirty`` of the code that trained it, from its result.json, ``None``
    for a cell trained before results recorded them; and ``same_run_as``, the cell whose run
    it took, for a cell that is the same run as another: :mod:`.same_runs`); ``protocol``
    (:func:`protocol_table`); and ``recipe_content``, the recipe file's mapping as it was
    loaded, from which :func:`~.reproduce.regenerate` rebuilds the recipe."""
    import torch

    import contrastkit

    results = [read_result(cell, out) for cell in cells]
    schedule: dict = {}
    runs: list = []
    for cell, result in zip(cells, results, strict=True):
        facts = result["cell"]
        schedule.setdefault(facts["cell_id"], {"steps": facts.get("steps"),
                                               "epochs": facts.get("epochs")})
        runs.append({"cell": cell.cell_id, "seed": cell.seed, "steps": facts.get("steps"),
                     "epochs": facts.get("epochs"), "threads": result.get("threads"),
                     "seconds": result.get("seconds"), "commit": result.get("commit"),
                     "source_dirty": result.get("source_dirty"),
                     **({"same_run_as": result["same_run_as"]} if "same_run_as" in result
                        else {})})
    settings = _data_settings(recipe, cells)
    datasets = sorted({f"{one['dataset']} with {one['backbone']}" for one in settings
                       if recipe.kind == "pretrain"})
    commit, dirty = source_commit()
    fresh = [result for cell, result in zip(cells, results, strict=True)
             if key(cell) not in (finished_before or set())]
    invocation = {"started": started.isoformat(timespec="seconds"), "seconds": seconds,
                  "commit": commit, "source_dirty": dirty, "runs": len(fresh),
                  "cell_seconds": sum(result["seconds"] for result in fresh)}
    return as_json({
        "format": RECORD_FORMAT, "recipe": recipe.name,
        "recipe_source": relative(recipe.source), "tier": tier, "command": command,
        "started": invocation["started"], "seconds": seconds,
        "cell_seconds": sum(result["seconds"] for result in results),
        "invocations": [*_earlier_invocations(out, recipe.name, tier), invocation],
        "seeds": sorted({cell.seed for cell in cells}),
        "cells": len({cell.cell_id for cell in cells}), "runs": len(cells),
        "contrastkit": contrastkit.__version__, "commit": commit, "source_dirty": dirty,
        "python": platform.python_version(), "torch": torch.__version__,
        "packages": packages(), "machine": machine(),
        "cpu": cpu(run["threads"] for run in runs),
        "fixed": recipe.tier(tier).fixed or recipe.fixed or "the settings of every run",
        "data": "; ".join(datasets) or CELL_KINDS.get(recipe.kind).data,
        "datasets": dataset_checksums((one["dataset"], str(one.get("data_dir", "data")))
                                      for one in settings if one.get("dataset")),
        "schedule": schedule, "cell_runs": runs,
        "protocol": protocol_table(recipe, tier, data_dir),
        "recipe_content": recipe_content(recipe),
    })


def _earlier_invocations(out: Path, recipe: str, tier: str) -> list[dict]:
    """The ``invocations`` of the record an earlier invocation of the same recipe and tier
    left in ``out`` (none when there is none, or it is unreadable or of an older layout)."""
    try:
        earlier = json.loads((Path(out) / RUN_JSON).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(earlier, dict) or (earlier.get("recipe"), earlier.get("tier")) != (
            recipe, tier):
        return []
    found = earlier.get("invocations")
    return [one for one in found if isinstance(one, dict)] if isinstance(found, list) else []


def protocol_table(recipe: Recipe, tier: str, data_dir: str | None = None) -> list[dict] | None:
    """The rows of ``contrastkit.experiments.protocol.settings_table(recipe, tier)``
    (``setting``, ``paper``, ``ours``, ``reason``) where that function exists and the recipe
    declares a protocol; ``None`` otherwise. A table that cannot be built is a warning and
    ``None``: the sweep's results, finished by then, are written all the same."""
    try:
        from .protocol import settings_table
    except ImportError:
        return None
    if not getattr(recipe, "protocol", None):
        return None
    try:
        where = {"data_dir": data_dir} if data_dir is not None else {}
        return [dict(row) for row in settings_table(recipe, tier, **where)]
    except Exception as error:  # a report without the table rather than a lost sweep
        warnings.warn(f"recipe {recipe.name}: the protocol's settings table could not be "
                      f"built ({error}); the report leaves it out", stacklevel=2)
        return None


def _data_settings(recipe: Recipe, cells: list[Cell]) -> list[dict]:
    """Each cell's settings, a pretrain cell's over the config's defaults (its dataset,
    backbone and data folder whether the recipe sets them or not)."""
    if recipe.kind != "pretrain":
        return [dict(cell.settings) for cell in cells]
    from dataclasses import fields

    from contrastkit.train import PretrainConfig

    defaults = {field.name: field.default for field in fields(PretrainConfig)}
    return [{**defaults, **cell.settings} for cell in cells]


def machine() -> str:
    """This machine in words: system, CPU cores, the GPU if any, the torch version."""
    import torch

    words = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores"
    if torch.cuda.is_available():
        words += f", {torch.cuda.get_device_name(0)}"
    return f"{words}, torch {torch.__version__}"


def command_line(name: str, tier: str, out: Path, jobs: int, seeds: int | None,
                 launcher: str, data_dir: str | None) -> str:
    """The ``contrastkit reproduce`` command line of these arguments, quoted for a shell, its
    recipe file, ``--out`` and ``--data-dir`` relative (:func:`~.provenance.relative`)."""
    words = ["contrastkit", "reproduce", relative(name), "--tier", tier, "--out",
             relative(out)]
    for flag, value, default in (("--jobs", jobs, 1), ("--seeds", seeds, None),
                                 ("--launcher", launcher, "local"),
                                 ("--data-dir", data_dir, None)):
        if value != default:
            words += [flag, relative(str(value)) if flag == "--data-dir" else str(value)]
    return shlex.join(words)
