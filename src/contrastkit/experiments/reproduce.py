"""One entry point that reproduces a recipe: run its cells, write the tidy results, the
summary over seeds, the claims' verdicts and the report (``contrastkit reproduce`` calls it)."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .kinds import CELL_KINDS
from .recipe import Cell, Recipe, load_recipe, recipe_names
from .runner import (
    Sweep,
    check_cells,
    check_launch,
    estimate_minutes,
    read_result,
    run_recipe,
    run_sweeps,
    tidy_rows,
)

RESULTS_CSV = "results.csv"
SUMMARY_CSV = "summary.csv"


@dataclass
class Reproduction:
    """What :func:`reproduce` returns: the tidy ``rows`` (one per cell x seed x metric), the
    ``summary`` (one row per cell x metric), the claims' ``verdicts``, the report's path and
    the output folder; with ``dry_run``, only the checked ``cells`` and the estimate (rows,
    summary and verdicts empty, no report)."""

    rows: list[dict]
    summary: list[dict]
    verdicts: list
    report_path: Path | None
    out: Path
    cells: list[Cell] = field(default_factory=list)
    estimate_minutes: float = 0.0
    dry_run: bool = False


DEFAULT_ROOT = Path("runs") / "reproduce"


def default_out(name: str, tier: str, root: str | Path = DEFAULT_ROOT) -> Path:
    """``runs/reproduce/<recipe name, / replaced by ->/<tier>`` (``root`` for
    ``runs/reproduce``)."""
    return Path(root) / name.replace("/", "-") / tier


def reproduce(name: str | Path, tier: str = "quick", out: str | Path | None = None,
              jobs: int = 1, seeds: int | None = None, launcher: str = "local",
              dry_run: bool = False, progress: bool = True, data_dir: str | None = None
              ) -> Reproduction:
    """Reproduce the recipe ``name`` (a shipped name or a YAML file) at ``tier``.

    Runs the cells (:func:`~.runner.run_recipe`: finished cells skipped, interrupted ones
    resumed, ``jobs`` in parallel or each a submitit job with ``launcher="submitit"``), then
    writes ``out/results.csv``, ``out/summary.csv`` and ``out/report.md`` with its figures,
    the verdict of every claim computed from the per-seed values. ``out`` defaults to
    :func:`default_out`. With ``dry_run``, every cell is built and checked
    (:func:`~.runner.check_cells`) and nothing runs or is written. ``seeds`` overrides the
    tier's number of seeds; ``data_dir`` the datasets' folder.
    """
    recipe = load_recipe(name)
    recipe.tier(tier)
    check_launch(jobs, launcher)
    out = Path(out) if out is not None else default_out(recipe.name, tier)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out {out} is a file; expected a folder")
    estimate = estimate_minutes(recipe, tier, seeds)
    if dry_run:
        cells = recipe.cells(tier, seeds, data_dir)
        check_cells(recipe, cells, out)
        return Reproduction([], [], [], None, out, cells, estimate, dry_run=True)
    started, start = datetime.now(timezone.utc), time.perf_counter()
    rows = run_recipe(recipe, tier, out, jobs, seeds, launcher, progress, data_dir)
    cells = recipe.cells(tier, seeds, data_dir)
    info = run_info(recipe, tier, out, cells, started, time.perf_counter() - start,
                    command=_command(str(name), tier, out, jobs, seeds, launcher, data_dir))
    return _write_outputs(recipe, tier, rows, out, info, cells, estimate)


def reproduce_all(tier: str = "cpu", out: str | Path | None = None, jobs: int = 1,
                  seeds: int | None = None, launcher: str = "local", dry_run: bool = False,
                  progress: bool = True, data_dir: str | None = None) -> list[Reproduction]:
    """:func:`reproduce` every shipped recipe that has ``tier``, as one sweep: the cells of all
    of them in one queue (``jobs`` at once; finished cells skipped, interrupted ones resumed,
    so the same call again continues where a killed one stopped), each recipe's results and
    report written as soon as its last cell finishes, one progress line for the whole
    (recipes done, cells done, time left). Each recipe's folder is
    ``OUT/<recipe, / replaced by ->/<tier>`` with ``out`` (default ``runs/reproduce``) as
    ``OUT``, the folder :func:`reproduce` uses for it alone by default. Returns one
    :class:`Reproduction` per recipe, in the order of :func:`recipe_names`."""
    check_launch(jobs, launcher)
    recipes = [recipe for recipe in map(load_recipe, recipe_names()) if tier in recipe.tiers]
    if not recipes:
        raise ValueError(f"no shipped recipe has a tier {tier!r}")
    root = DEFAULT_ROOT if out is None else Path(out)
    if root.exists() and not root.is_dir():
        raise ValueError(f"out {root} is a file; expected a folder")
    folders = [default_out(recipe.name, tier, root) for recipe in recipes]
    cells = [recipe.cells(tier, seeds, data_dir) for recipe in recipes]
    estimates = [estimate_minutes(recipe, tier, seeds) for recipe in recipes]
    if dry_run:
        for recipe, chosen, folder in zip(recipes, cells, folders, strict=True):
            check_cells(recipe, chosen, folder)
        return [Reproduction([], [], [], None, folder, chosen, estimate, dry_run=True)
                for folder, chosen, estimate in zip(folders, cells, estimates, strict=True)]
    started = datetime.now(timezone.utc)
    done: dict[int, Reproduction] = {}

    def write(index: int, results: dict, seconds: float) -> None:
        recipe, folder = recipes[index], folders[index]
        rows = tidy_rows(recipe, tier, cells[index], results)
        info = run_info(recipe, tier, folder, cells[index], started, seconds,
                        command=_command(recipe.name, tier, folder, jobs, seeds, launcher,
                                         data_dir))
        done[index] = _write_outputs(recipe, tier, rows, folder, info, cells[index],
                                     estimates[index])

    run_sweeps([Sweep(chosen, folder) for chosen, folder in zip(cells, folders, strict=True)],
               jobs, launcher, progress, sum(estimates) * 60, on_sweep_done=write)
    return [done[index] for index in range(len(recipes))]


def _write_outputs(recipe: Recipe, tier: str, rows: list[dict], out: Path, info: dict,
                   cells: list[Cell], estimate: float) -> Reproduction:
    """results.csv, summary.csv, the verdicts and report.md of a finished sweep."""
    from .claims import evaluate_claims
    from .report import write_report
    from .results import summarize, write_results, write_summary

    write_results(rows, out / RESULTS_CSV)
    summary = summarize(rows)
    write_summary(summary, out / SUMMARY_CSV)
    verdicts = evaluate_claims(recipe, rows)
    report = write_report(recipe, tier, rows, summary, verdicts, out, info)
    return Reproduction(rows, summary, verdicts, Path(report), out, cells, estimate)


def run_info(recipe: Recipe, tier: str, out: Path, cells: list[Cell], started: datetime,
             seconds: float, command: str) -> dict:
    """What the report says about the run: the ``command``, the ``machine``, the wall time
    of this call (``seconds``; cells finished by an earlier call cost it nothing), when it
    ``started``, ``cell_seconds`` (the compute time of all cells, whichever call ran them),
    each cell's optimizer ``steps`` and ``epochs`` (``schedule``, keyed by cell id), what is
    held ``fixed`` across batch sizes, and the ``data`` the cells used."""
    results = [read_result(cell, out) for cell in cells]
    schedule = {}
    for result in results:
        facts = result["cell"]
        schedule.setdefault(facts["cell_id"], {"steps": facts.get("steps"),
                                               "epochs": facts.get("epochs")})
    datasets = sorted({f"{settings['dataset']} with {settings['backbone']}"
                       for settings in _pretrain_settings(recipe, cells)})
    return {"command": command, "machine": machine(), "seconds": seconds,
            "started": started.isoformat(timespec="seconds"),
            "cell_seconds": sum(result["seconds"] for result in results),
            "schedule": schedule,
            "fixed": recipe.tier(tier).fixed or recipe.fixed or "the settings of every run",
            "data": "; ".join(datasets) or CELL_KINDS.get(recipe.kind).data}


def _pretrain_settings(recipe: Recipe, cells: list[Cell]) -> list[dict]:
    """Each pretrain cell's settings over the config's defaults (none for other kinds)."""
    if recipe.kind != "pretrain":
        return []
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


def _command(name: str, tier: str, out: Path, jobs: int, seeds: int | None, launcher: str,
             data_dir: str | None) -> str:
    """The ``contrastkit reproduce`` command line of these arguments."""
    words = ["contrastkit", "reproduce", name, "--tier", tier, "--out", str(out)]
    for flag, value, default in (("--jobs", jobs, 1), ("--seeds", seeds, None),
                                 ("--launcher", launcher, "local"),
                                 ("--data-dir", data_dir, None)):
        if value != default:
            words += [flag, str(value)]
    return " ".join(words)
