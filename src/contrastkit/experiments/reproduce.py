"""One entry point that reproduces a recipe: run its cells, write the tidy results, the run
record, the summary over seeds, the claims' verdicts and the report (``contrastkit
reproduce`` calls it); :func:`regenerate` writes the summary, report and figures again from
the results and the run record alone, and :func:`publish` copies the files that allow it (an
evidence folder, :mod:`.evidence`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from contrastkit.files import run_folder_io

from .dry_run import check_claims
from .evidence import (
    RESULTS_CSV,
    RUN_JSON,
    SUMMARY_CSV,
    check_destination,
    clear_destination,
    copy_cell_file,
    evidence_files,
    read_evidence,
    read_run_record,
    recipe_from_record,
    write_run_record,
)
from .recipe import Cell, Recipe, load_recipe, recipe_names
from .run_record import command_line, finished_cells, machine, protocol_table, run_record
from .runner import (
    Sweep,
    check_cells,
    check_launch,
    check_seeds,
    estimate_minutes,
    run_recipe,
    run_sweeps,
    tidy_rows,
)
from .sweep_folder import check_sweep_folder, mark_sweep_folder

__all__ = ["RESULTS_CSV", "RUN_JSON", "SUMMARY_CSV", "Reproduction", "default_out", "machine",
           "protocol_table", "publish", "regenerate", "reproduce", "reproduce_all",
           "run_record"]


@dataclass
class Reproduction:
    """What :func:`reproduce` returns: the tidy ``rows`` (one per cell x seed x metric), the
    ``summary`` (one row per cell x metric), the claims' ``verdicts``, the report's path and
    the output folder, and the report's ``figures_not_drawn`` for want of the cells' files
    (name -> :class:`~.figures.Undrawn`); with ``dry_run``, only the checked ``cells`` and
    the estimate (rows, summary and verdicts empty, no report)."""

    rows: list[dict]
    summary: list[dict]
    verdicts: list
    report_path: Path | None
    out: Path
    cells: list[Cell] = field(default_factory=list)
    estimate_minutes: float = 0.0
    dry_run: bool = False
    figures_not_drawn: dict = field(default_factory=dict)


DEFAULT_ROOT = Path("runs") / "reproduce"


def default_out(name: str, tier: str, root: str | Path = DEFAULT_ROOT) -> Path:
    """``runs/reproduce/<recipe name, / replaced by ->/<tier>`` (``root`` for
    ``runs/reproduce``)."""
    return Path(root) / name.replace("/", "-") / tier


def reproduce(name: str | Path, tier: str = "quick", out: str | Path | None = None,
              jobs: int = 1, seeds: int | None = None, launcher: str = "local",
              dry_run: bool = False, progress: bool = True, data_dir: str | None = None,
              overwrite: bool = False) -> Reproduction:
    """Reproduce the recipe ``name`` (a shipped name or a YAML file) at ``tier``.

    Runs the cells (:func:`~.runner.run_recipe`: finished cells skipped, interrupted ones
    resumed, ``jobs`` in parallel or each a submitit job with ``launcher="submitit"``), then
    writes ``out/results.csv``, ``out/run.json`` (:func:`run_record`), ``out/summary.csv`` and
    ``out/report.md`` with its figures, the verdict of every claim computed from the per-seed
    values. ``out`` defaults to
    :func:`default_out`. With ``dry_run``, every cell is built and checked
    (:func:`~.runner.check_cells`) and nothing runs or is written; without, the claims are
    checked against the tier's grid before the first cell runs
    (:func:`~.dry_run.check_claims`). ``seeds`` overrides the tier's number of seeds;
    ``data_dir`` the datasets' folder.

    ``out`` must be new, empty or a sweep folder (:mod:`.sweep_folder`: marked when its sweep
    starts, and continued by the same call again); a folder that holds anything else is a
    ``ValueError`` unless ``overwrite``, which lets the sweep write its own files there (a
    results.csv or report.md of the same name replaced) and touch nothing else.
    """
    recipe = load_recipe(name)
    recipe.tier(tier)
    check_launch(jobs, launcher)
    check_seeds(seeds)
    out = Path(out) if out is not None else default_out(recipe.name, tier)
    check_sweep_folder(out, recipe.name, tier, overwrite)
    estimate = estimate_minutes(recipe, tier, seeds)
    cells = recipe.cells(tier, seeds, data_dir)
    if dry_run:
        check_cells(recipe, cells, out)
        return Reproduction([], [], [], None, out, cells, estimate, dry_run=True)
    check_claims(recipe, cells)
    mark_sweep_folder(out, recipe.name, tier)
    started, start = datetime.now(timezone.utc), time.perf_counter()
    before = finished_cells(cells, out)
    rows = run_recipe(recipe, tier, out, jobs, seeds, launcher, progress, data_dir)
    record = run_record(recipe, tier, out, cells, started, time.perf_counter() - start,
                        command=command_line(str(name), tier, out, jobs, seeds, launcher,
                                             data_dir), data_dir=data_dir,
                        finished_before=before)
    return _write_outputs(recipe, tier, rows, out, record, cells, estimate)


def reproduce_all(tier: str = "cpu", out: str | Path | None = None, jobs: int = 1,
                  seeds: int | None = None, launcher: str = "local", dry_run: bool = False,
                  progress: bool = True, data_dir: str | None = None,
                  overwrite: bool = False) -> list[Reproduction]:
    """:func:`reproduce` every shipped recipe that has ``tier``, as one sweep: the cells of all
    of them in one queue (``jobs`` at once; finished cells skipped, interrupted ones resumed,
    so the same call again continues where a killed one stopped), each recipe's results and
    report written as soon as its last cell finishes, one progress line for the whole
    (recipes done, cells done, time left). Each recipe's folder is
    ``OUT/<recipe, / replaced by ->/<tier>`` with ``out`` (default ``runs/reproduce``) as
    ``OUT``, the folder :func:`reproduce` uses for it alone by default, checked as
    :func:`reproduce` checks it (``overwrite`` likewise), every one before any cell runs.
    Returns one :class:`Reproduction` per recipe, in the order of :func:`recipe_names`."""
    check_launch(jobs, launcher)
    check_seeds(seeds)
    recipes = [recipe for recipe in map(load_recipe, recipe_names()) if tier in recipe.tiers]
    if not recipes:
        raise ValueError(f"no shipped recipe has a tier {tier!r}")
    root = DEFAULT_ROOT if out is None else Path(out)
    if root.exists() and not root.is_dir():
        raise ValueError(f"out {root} is a file; expected a folder")
    folders = [default_out(recipe.name, tier, root) for recipe in recipes]
    for recipe, folder in zip(recipes, folders, strict=True):
        check_sweep_folder(folder, recipe.name, tier, overwrite)
    cells = [recipe.cells(tier, seeds, data_dir) for recipe in recipes]
    estimates = [estimate_minutes(recipe, tier, seeds) for recipe in recipes]
    if dry_run:
        for recipe, chosen, folder in zip(recipes, cells, folders, strict=True):
            check_cells(recipe, chosen, folder)
        return [Reproduction([], [], [], None, folder, chosen, estimate, dry_run=True)
                for folder, chosen, estimate in zip(folders, cells, estimates, strict=True)]
    for recipe, chosen in zip(recipes, cells, strict=True):
        check_claims(recipe, chosen)
    for recipe, folder in zip(recipes, folders, strict=True):
        mark_sweep_folder(folder, recipe.name, tier)
    started = datetime.now(timezone.utc)
    before = [finished_cells(chosen, folder) for chosen, folder in zip(cells, folders,
                                                                        strict=True)]
    done: dict[int, Reproduction] = {}

    def write(index: int, results: dict, seconds: float) -> None:
        recipe, folder = recipes[index], folders[index]
        rows = tidy_rows(recipe, tier, cells[index], results)
        record = run_record(recipe, tier, folder, cells[index], started, seconds,
                            command=command_line(recipe.name, tier, folder, jobs, seeds,
                                                 launcher, data_dir), data_dir=data_dir,
                            finished_before=before[index])
        done[index] = _write_outputs(recipe, tier, rows, folder, record, cells[index],
                                     estimates[index])

    run_sweeps([Sweep(chosen, folder) for chosen, folder in zip(cells, folders, strict=True)],
               jobs, launcher, progress, sum(estimates) * 60, on_sweep_done=write)
    return [done[index] for index in range(len(recipes))]


def _write_outputs(recipe: Recipe, tier: str, rows: list[dict], out: Path, record: dict,
                   cells: list[Cell], estimate: float) -> Reproduction:
    """results.csv and run.json of a finished sweep, then what :func:`regenerate` derives
    from them: summary.csv, the verdicts, report.md and its figures (from the rows, the
    record as read back and the recipe of the record's snapshot, so that regenerating the
    folder writes the same files)."""
    from .results import write_results

    write_results(rows, out / RESULTS_CSV)
    write_run_record(out, record)
    record = read_run_record(out)
    done = _derive(recipe_from_record(record), tier, rows, out, record, source=out)
    return replace(done, cells=cells, estimate_minutes=estimate)


def _derive(recipe: Recipe, tier: str, rows: list[dict], out: Path, record: dict,
            source: Path) -> Reproduction:
    """summary.csv, the verdicts and report.md (with its figures, which read the cells' files
    under ``source``) in ``out``."""
    from .claims import evaluate_claims
    from .report import figures_not_drawn, write_report
    from .results import summarize, write_summary

    summary = summarize(rows)
    write_summary(summary, out / SUMMARY_CSV)
    verdicts = evaluate_claims(recipe, rows)
    report = write_report(recipe, tier, rows, summary, verdicts, out, record, source=source)
    return Reproduction(rows, summary, verdicts, Path(report), out, figures_not_drawn=
                        figures_not_drawn(recipe, rows, summary, out, source))


def regenerate(folder: str | Path, out: str | Path | None = None) -> Reproduction:
    """Write summary.csv, report.md and the figures of the sweep or evidence folder ``folder``
    again from its results.csv and run.json alone: the recipe is the record's snapshot (not
    the shipped recipe as it is now), the rows are read back typed as the sweep wrote them
    (:func:`~.results.read_results`), and the figures read only the cell files they declare
    (``folder/cells/<cell>/seed-<k>/``), never a run's checkpoint. The files go to ``out``
    (default: ``folder`` itself). For a folder written by :func:`reproduce`, the summary and
    the report are the same, byte for byte. A figure whose cell files ``folder`` lacks is not
    drawn (its earlier drawing in ``out``, if any, is left as it was) and the report says so
    (:attr:`Reproduction.figures_not_drawn`). A record and rows that do not describe the same
    sweep (recipe, tier, format, the cells of the snapshot's grid, seeds:
    :func:`~.evidence.read_evidence`) are a ``ValueError`` naming the mismatch, and nothing
    is written. Rows judged under an earlier convergence rule, or before the rule had a
    version, are judged again by today's (:func:`~.convergence.rejudge_rows`: a record that
    lacks the curves it needs is not converged), and the re-judged results.csv is written to
    ``out`` too. Returns the :class:`Reproduction` (no cells)."""
    from .convergence import rejudge_rows
    from .results import write_results

    folder = Path(folder)
    out = folder if out is None else Path(out)
    record, recipe, rows = read_evidence(folder)
    tier = record["tier"]
    out.mkdir(parents=True, exist_ok=True)
    rejudged = rejudge_rows(rows)
    if rejudged != rows:
        write_results(rejudged, out / RESULTS_CSV)
    return _derive(recipe, tier, rejudged, out, record, source=folder)


def publish(out: str | Path, dest: str | Path) -> list[Path]:
    """Copy the evidence of the finished sweep folder ``out`` to ``dest`` (for instance
    ``docs/reproduction/<recipe>-<tier>/``): results.csv, run.json, summary.csv, report.md,
    the report's figures, and of the cells' folders only the files the figures declare
    (``cells/<cell>/seed-<k>/<file>``; of an ``.npz``, only the arrays they read). ``dest``
    may be new, empty, or an earlier evidence folder, whose files are replaced; a folder that
    holds anything else is a ``ValueError`` (nothing is deleted then). Returns the files
    written; :func:`regenerate` of ``dest`` rebuilds its summary, report and figures."""
    out, dest = Path(out), Path(dest)
    if dest.resolve() == out.resolve():
        raise ValueError(f"dest {dest} is the sweep folder itself; publish to another folder")
    files = evidence_files(out)
    check_destination(dest, set(files))
    clear_destination(dest)
    written = []
    with run_folder_io("write", dest):
        for relative, keys in files.items():
            copy_cell_file(out / relative, dest / relative, keys)
            written.append(dest / relative)
    return written
