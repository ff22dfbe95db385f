"""The evidence of a reproduction: the run record (``run.json``) a sweep writes beside its
results, the recipe rebuilt from the record's snapshot, and the set of files that makes a
folder regenerable (:func:`evidence_files`, :func:`copy_cell_file`).

A sweep folder ``OUT`` holds ``results.csv`` (one row per cell x seed x metric), ``run.json``
(how, where and with what the sweep ran, and the recipe's content as it was loaded),
``summary.csv``, ``report.md``, the report's figures, and the cells' run folders under
``cells/<cell>/seed-<k>/``. An *evidence folder* holds the same files but, of the cell
folders, only the small files the report's figures read (each figure declares them:
:attr:`~contrastkit.experiments.figures.FigureSpec.cell_files`), at the same relative paths:
summary.csv, report.md and the figures regenerate from it alone
(:func:`contrastkit.experiments.reproduce.regenerate`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.files import run_folder_io, write_text_atomic

if TYPE_CHECKING:
    from .recipe import Recipe

#: A sweep's tidy results: one row per cell x seed x metric.
RESULTS_CSV = "results.csv"
#: A sweep's results over seeds, per cell and metric: mean, std and a 95 % t-interval.
SUMMARY_CSV = "summary.csv"
#: A sweep's run record: how, where and with what it ran, and the recipe as it was loaded.
RUN_JSON = "run.json"
REPORT_MD = "report.md"
CELLS = "cells"
#: The version of run.json's layout (a later layout that changes a key bumps it).
RECORD_FORMAT = 1
#: The files of an evidence folder besides its figures and cell files.
TOP_FILES = (RESULTS_CSV, RUN_JSON, SUMMARY_CSV, REPORT_MD)
_FIGURE_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def source_commit() -> tuple[str | None, bool | None]:
    """The git commit of the source tree contrastkit was imported from, and whether that tree
    has changes not committed (tracked files changed, or files git does not know yet); ``(None,
    None)`` when the package is not a file of a git checkout (an installed copy), or git is
    missing or fails. Never raises."""
    import contrastkit

    package = Path(contrastkit.__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(package), *args], capture_output=True,
                                  text=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    # the package's own __init__.py must be tracked: a copy installed into a folder that lies
    # inside some checkout (a virtual environment in a repository) is not that checkout's code
    if git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None, None
    commit = git("rev-parse", "HEAD")
    if not commit:
        return None, None
    status = git("status", "--porcelain", "--", ".")
    return commit, None if status is None else bool(status)


def recipe_content(recipe) -> dict:
    """The mapping in the recipe's YAML file, as :func:`~.recipe.load_recipe` read it (a
    shipped recipe's ``source`` is its path under the package's recipes; a file's, its
    path)."""
    from contrastkit.yaml_files import read_yaml

    from .recipe import RECIPES, SUFFIX

    shipped = RECIPES / recipe.source
    path = shipped if recipe.source == f"{recipe.name}{SUFFIX}" and shipped.is_file() \
        else Path(recipe.source)
    content = read_yaml(path, f"recipe {recipe.source}")
    if not isinstance(content, dict):
        raise ValueError(f"recipe {recipe.source} must hold a mapping of key: value")
    return content


def as_json(value):
    """``value`` as JSON's types (tuples as lists, keys as text, other objects as their
    text): what run.json gives back when read."""
    return json.loads(json.dumps(value, default=str))


def write_run_record(out: str | Path, record: Mapping) -> Path:
    """Write ``record`` to ``out/run.json`` (atomically); returns the path."""
    path = Path(out) / RUN_JSON
    write_text_atomic(path, json.dumps(record, indent=1, default=str) + "\n")
    return path


def read_run_record(folder: str | Path) -> dict:
    """The run record of the sweep or evidence folder ``folder``; a ``ValueError`` says
    what is missing or malformed."""
    path = Path(folder) / RUN_JSON
    if not path.is_file():
        raise ValueError(f"{folder} holds no {RUN_JSON}: it is not the folder of a sweep run "
                         f"by this contrastkit (run the sweep again: its finished cells are "
                         f"reused, and the record is written)")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    missing = [key for key in ("recipe", "recipe_source", "tier", "recipe_content")
               if not isinstance(record, dict) or key not in record]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}: not a run record")
    if record.get("format") != RECORD_FORMAT:
        found = "no format" if record.get("format") is None else f"format {record['format']!r}"
        raise ValueError(f"{path} has {found}; this contrastkit reads format {RECORD_FORMAT} "
                         f"(a run record of another version, or edited)")
    return record


def read_evidence(folder: str | Path) -> tuple[dict, Recipe, list[dict]]:
    """The run record of the sweep or evidence folder ``folder``, the
    :class:`~.recipe.Recipe` of its snapshot and the rows of its results.csv (typed as the
    sweep wrote them, :func:`~.results.read_results`), checked to describe the same sweep
    (:mod:`.record_checks`); a ``ValueError`` names what is missing or does not agree."""
    from .record_checks import check_record_rows, check_record_tier
    from .results import read_results

    folder = Path(folder)
    record = read_run_record(folder)
    results = folder / RESULTS_CSV
    if not results.is_file():
        raise ValueError(f"{folder} holds no {RESULTS_CSV}: nothing to regenerate from")
    recipe = recipe_from_record(record)
    check_record_tier(record, recipe, folder / RUN_JSON)
    rows = read_results(results, recipe.axes(record["tier"]))
    if not rows:
        raise ValueError(f"{results} holds no rows")
    check_record_rows(record, recipe, rows, folder / RUN_JSON, results)
    return record, recipe, rows


def recipe_from_record(record: Mapping):
    """The :class:`~.recipe.Recipe` of the run record's snapshot, named as the sweep named it:
    the snapshot is checked and built exactly as a recipe file is (it is written to a
    temporary file and loaded), so the report does not depend on the shipped recipe as it is
    now."""
    import yaml

    from .recipe import SUFFIX, load_recipe

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"snapshot{SUFFIX}"
        path.write_text(yaml.safe_dump(record["recipe_content"], sort_keys=False,
                                       allow_unicode=True))
        recipe = load_recipe(path)
    return dataclasses.replace(recipe, name=record["recipe"], source=record["recipe_source"])


def figure_links(report: str | Path) -> list[str]:
    """The files report.md shows as images, in its order."""
    path = Path(report)
    return _FIGURE_LINK.findall(path.read_text()) if path.is_file() else []


def copy_cell_file(source: Path, target: Path, keys: tuple[str, ...] | None) -> None:
    """Copy ``source`` to ``target``; of an ``.npz`` with ``keys``, only those arrays."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if keys is None or source.suffix != ".npz":
        shutil.copyfile(source, target)
        return
    import numpy as np

    with np.load(source) as saved:
        kept = {key: saved[key] for key in keys if key in saved.files}
    with open(target, "wb") as handle:
        np.savez(handle, **kept)


def check_destination(dest: Path, names: set[str]) -> None:
    """``dest`` is absent, empty, or an earlier evidence folder (only results.csv, run.json,
    summary.csv, report.md, PNG figures and ``cells/``): anything else in it is a ``ValueError``
    naming it, so publishing never deletes a file it did not write."""
    if not dest.exists():
        return
    if not dest.is_dir():
        raise ValueError(f"dest {dest} is a file; expected a folder")
    for entry in dest.iterdir():
        if entry.name == CELLS and entry.is_dir():
            continue
        if entry.is_file() and (entry.name in names or entry.suffix == ".png"):
            continue
        raise ValueError(f"dest {dest} holds {entry.name}, which is no part of an evidence "
                         f"folder: publish into a new or an evidence folder")


def clear_destination(dest: Path) -> None:
    """Remove what an earlier evidence folder in ``dest`` held (see
    :func:`check_destination`)."""
    if not dest.is_dir():
        return
    with run_folder_io("clear", dest):
        for entry in dest.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def evidence_files(folder: str | Path) -> dict[str, tuple[str, ...] | None]:
    """The files of the sweep or evidence folder ``folder`` that make an evidence folder, by
    path relative to it: results.csv, run.json, summary.csv, report.md, the figures report.md
    shows, and each cell file that the report's figures declare and that exists (value: the
    ``.npz`` arrays kept, ``None`` for the whole file). A folder without its results, run
    record, summary or report is a ``ValueError`` naming what is missing."""
    from .figures import cell_file_paths, cell_files, figure_kinds
    from .results import cell_axes

    folder = Path(folder)
    read_run_record(folder)
    missing = [name for name in TOP_FILES if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"{folder} lacks {', '.join(missing)}: not a finished sweep")
    record, recipe, rows = read_evidence(folder)
    files: dict[str, tuple[str, ...] | None] = dict.fromkeys(TOP_FILES)
    for link in figure_links(folder / REPORT_MD):
        if not (folder / link).is_file():
            raise ValueError(f"{folder / REPORT_MD} shows {link}, which {folder} lacks")
        files[link] = None
    metrics = list(dict.fromkeys(row["metric"] for row in rows))
    kinds = figure_kinds(getattr(recipe, "figure", None), cell_axes(rows), metrics)
    wanted = cell_files(kinds)
    for relative in cell_file_paths(rows, wanted):
        if (folder / relative).is_file():
            files[relative] = wanted[relative.rsplit("/", 1)[1]]
    return files
