"""Running a recipe's cells: each one an ordinary run folder, finished cells skipped,
interrupted ones resumed, in one process, in ``jobs`` parallel processes, or as submitit jobs.

The folder of a cell is ``OUT/cells/<cell_id>/seed-<seed>/`` (:meth:`Cell.folder`). A pretrain
cell is an ordinary ``pretrain`` run there (``runs_dir=OUT/cells/<cell_id>``,
``name=seed-<seed>``, ``seed=<seed>``, ``progress=false``) followed by ``evaluate_run``
(eval.json); a cell of another kind runs its kind's function (:mod:`.kinds`). Then
``result.json`` = ``{"metrics": {...}, "cell": {...}, "seconds": ...}`` is written (``metrics``
a list of points for a kind with point axes, :func:`.kinds.cell_points`), last and
atomically: a cell is finished iff its result.json exists. A cell with a run folder but no
result.json is resumed from its last checkpoint (``pretrain(config, resume="last")``, which
returns at once when training had completed), then evaluated. Killing a sweep and starting it
again therefore loses at most the cells' unsaved progress and repeats nothing finished.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from contrastkit.threads import environment, job_environment, threads_per_job

from . import recipe_checks
from .convergence import HalfWayProbe, converged
from .kinds import CELL_KINDS, cell_points, point_id
from .progress import SweepProgress
from .recipe import Cell, Recipe, train_size

RESULT = "result.json"
#: A cell folder's record of what it computes (:meth:`Cell.identity`), written before it runs.
IDENTITY = "cell.json"
LAUNCHERS = ("local", "submitit")
#: ``smoke=True``: every cell trains one epoch at this batch size and is not evaluated.
SMOKE_BATCH = 8
#: The columns every tidy row has, first (then one per other axis of the recipe).
ROW_COLUMNS = ("recipe", "tier", "cell", "loss", "batch_size", "temperature", "vrns", "seed",
               "metric", "value")
_TRAIN_METRICS = ("loss", "neg_sim_var", "neg_sim_mean", "pos_sim_mean")


def run_recipe(recipe: Recipe, tier: str = "quick", out: str | Path = "runs/reproduce",
               jobs: int = 1, seeds: int | None = None, launcher: str = "local",
               progress: bool = True, data_dir: str | None = None) -> list[dict]:
    """Run every cell of ``recipe``'s ``tier`` (:meth:`Recipe.cells`) under ``out``, skipping
    finished cells and resuming interrupted ones, and return the tidy rows (:func:`tidy_rows`).

    Args:
        jobs: cells run at once, each in one of ``jobs`` long-lived worker processes
            (``spawn``), the CPU cores split between them (``cores // jobs`` threads in each,
            :func:`contrastkit.threads.threads_per_job`).
        seeds: overrides the tier's number of seeds.
        launcher: ``"local"``, or ``"submitit"``: each cell is a submitit job
            (``submitit.AutoExecutor(folder=out/submitit)``: a SLURM job on a cluster, a local
            process elsewhere; ``jobs`` is then unused). Needs the ``launch`` extra.
        progress: show cells done / total, the running cells and an ETA on standard error.
        data_dir: where the datasets' files are (overrides the recipe's ``data_dir``).
    """
    check_launch(jobs, launcher)
    cells = recipe.cells(tier, seeds, data_dir)
    results = run_cells(cells, out, jobs, launcher, progress,
                        estimate_minutes(recipe, tier, seeds) * 60)
    return tidy_rows(recipe, tier, cells, results)


def estimate_minutes(recipe: Recipe, tier: str, seeds: int | None = None) -> float:
    """The recipe's estimate of the whole tier, scaled from its seeds to ``seeds``."""
    chosen = recipe.tier(tier)
    return chosen.estimate_minutes * len(recipe.seeds(tier, seeds)) / chosen.seeds


def check_launch(jobs: int, launcher: str) -> None:
    """``jobs`` is a count >= 1 and ``launcher`` a known one, whose package is installed."""
    from contrastkit.checks.scalars import check_choice, check_count

    check_count("jobs", jobs, 1)
    check_choice("launcher", launcher, LAUNCHERS)
    if launcher == "submitit":
        try:
            import submitit  # noqa: F401
        except ImportError:
            raise ValueError("launcher submitit needs the submitit package: "
                             "pip install 'contrastkit[launch]'") from None


def run_cells(cells: list[Cell], out: str | Path, jobs: int = 1, launcher: str = "local",
              progress: bool = True, estimate_seconds: float = 0.0
              ) -> dict[tuple[str, int], dict]:
    """Run the unfinished ``cells`` (see :func:`run_recipe`); every cell's result, keyed by
    ``(cell_id, seed)``."""
    return run_sweeps([Sweep(cells, Path(out))], jobs, launcher, progress,
                      estimate_seconds)[0]


@dataclass(frozen=True)
class Sweep:
    """The ``cells`` of one recipe's tier, run under the folder ``out``."""

    cells: list[Cell]
    out: Path


def run_sweeps(sweeps: list[Sweep], jobs: int = 1, launcher: str = "local",
               progress: bool = True, estimate_seconds: float = 0.0,
               on_sweep_done: Callable[[int, dict, float], None] = lambda *done: None
               ) -> list[dict[tuple[str, int], dict]]:
    """Run the unfinished cells of every sweep, all in one queue (``jobs`` at once, or each a
    submitit job), and return each sweep's results keyed by ``(cell_id, seed)``, finished
    cells read rather than run. ``on_sweep_done(index, results, seconds)`` is called as soon
    as every cell of ``sweeps[index]`` has a result (at once for a sweep finished before), so
    a sweep's report can be written while the others still run; ``seconds`` is the wall time
    from its first cell's start in this call to its last cell's end (0 if none ran). The
    progress line counts the cells of all sweeps and, with several sweeps, the sweeps done."""
    for sweep in sweeps:
        for cell in sweep.cells:
            check_identity(cell, sweep.out)
    results = [{key(cell): read_result(cell, sweep.out) for cell in sweep.cells
                if is_finished(cell, sweep.out)} for sweep in sweeps]
    todo = [(index, cell) for index, sweep in enumerate(sweeps) for cell in sweep.cells
            if key(cell) not in results[index]]
    left = [len(sweep.cells) - len(done) for sweep, done in zip(sweeps, results, strict=True)]
    total = sum(len(sweep.cells) for sweep in sweeps)
    # A submitit job's time limit: thrice the estimate per cell, at least an hour.
    limit = max(60, math.ceil(3 * estimate_seconds / 60 / max(total, 1)))
    recipes = len(sweeps) if len(sweeps) > 1 else None
    sweep_of = {(sweeps[index].out, key(cell)): index for index, cell in todo}
    first_start: dict[int, float] = {}
    with SweepProgress(total, total - len(todo), estimate_seconds, progress,
                       recipes=recipes) as shown:
        def started(task: Task) -> None:
            first_start.setdefault(sweep_of[task[1], key(task[0])], time.perf_counter())
            shown.started(_label(task[0]))

        for index, count in enumerate(left):
            if count == 0:
                shown.recipe_finished()
                on_sweep_done(index, results[index], 0.0)
        tasks = [(cell, sweeps[index].out) for index, cell in todo]
        for (cell, out), result in _launch(tasks, jobs, launcher, started, limit):
            index = sweep_of[out, key(cell)]
            results[index][key(cell)] = result
            shown.finished(_label(cell), result["seconds"])
            left[index] -= 1
            if left[index] == 0:
                shown.recipe_finished()
                on_sweep_done(index, results[index], time.perf_counter() - first_start[index])
    return results


def check_identity(cell: Cell, out: str | Path) -> None:
    """A cell folder that holds anything was made by this very cell (its ``cell.json`` equals
    :meth:`Cell.identity`); otherwise a ``ValueError`` says which settings differ, so old
    results are never relabelled with new settings nor resumed under them."""
    folder = cell.folder(out)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    where = f"cell {cell.cell_id} seed {cell.seed} in {folder}"
    advice = f"use another --out, or delete {folder} to run the cell again"
    path = folder / IDENTITY
    if not path.is_file():
        raise ValueError(f"{where} holds a run with no record of its settings ({IDENTITY}; "
                         f"an older contrastkit made it): it cannot stand for this recipe's "
                         f"cell; {advice}")
    recorded = _read_json(path)
    differences = _differences(recorded, cell.identity())
    if differences:
        raise ValueError(f"{where} was run with other settings ({'; '.join(differences)}): "
                         f"its results cannot stand for this recipe's cell; {advice}")


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every entry that differs between two identities (nested
    mappings by dotted key)."""
    found = []
    for name in sorted(set(old) | set(new), key=str):
        a, b = old.get(name, "(unset)"), new.get(name, "(unset)")
        if isinstance(a, dict) and isinstance(b, dict):
            found += _differences(a, b, f"{prefix}{name}.")
        elif a != b:
            found.append(f"{prefix}{name}: {a!r} -> {b!r}")
    return found


def _read_json(path: Path) -> dict:
    """The JSON mapping in ``path``; a file that is not one is a ``ValueError`` naming it."""
    try:
        content = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        message = f"{path} is not valid JSON ({error}); delete it to rerun that cell"
        raise ValueError(message) from None
    if not isinstance(content, dict):
        raise ValueError(f"{path} must hold a JSON mapping; delete it to rerun that cell")
    return content


def key(cell: Cell) -> tuple[str, int]:
    return cell.cell_id, cell.seed


def is_finished(cell: Cell, out: str | Path) -> bool:
    return (cell.folder(out) / RESULT).is_file()


def read_result(cell: Cell, out: str | Path) -> dict:
    """The cell's result.json."""
    return _read_json(cell.folder(out) / RESULT)


def _label(cell: Cell) -> str:
    return f"{cell.recipe} {cell.cell_id} seed {cell.seed}"


Task = tuple[Cell, Path]  # a cell and the sweep folder it runs under


Started = Callable[[Task], None]  # told when a task's cell starts


def _launch(tasks: list[Task], jobs: int, launcher: str, started: Started,
            timeout_min: int) -> Iterator[tuple[Task, dict]]:
    """Each task of ``tasks`` and its cell's result, as they finish."""
    if launcher == "submitit":
        return _run_submitit(tasks, started, timeout_min)
    if jobs == 1:
        return _run_inline(tasks, started)
    return _run_processes(tasks, jobs, started)


def _run_inline(tasks: list[Task], started: Started) -> Iterator[tuple[Task, dict]]:
    """The cells one after another in this process, each dataset loaded once."""
    from contrastkit.data import cached_datasets

    with cached_datasets():
        for task in tasks:
            started(task)
            yield task, run_cell(*task)


def _run_processes(tasks: list[Task], jobs: int, started: Started
                   ) -> Iterator[tuple[Task, dict]]:
    """The cells in ``jobs`` long-lived worker processes (``spawn``), which import torch and
    load each dataset once and split the cores (:func:`contrastkit.threads.threads_per_job`
    threads each, waiting threads asleep); a worker dies with this process. The first failure
    cancels the cells not yet started and is raised (the running ones finish and keep their
    results)."""
    threads = threads_per_job(jobs)
    with environment(job_environment(threads)), ProcessPoolExecutor(
            jobs, mp_context=get_context("spawn"), initializer=_start_worker,
            initargs=(threads,)) as pool:
        queue, running = list(tasks), {}
        try:
            while queue or running:
                while queue and len(running) < jobs:  # submitted only when a worker is free
                    task = queue.pop(0)
                    started(task)
                    running[pool.submit(run_cell, *task)] = task
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield running.pop(future), future.result()
        finally:
            pool.shutdown(cancel_futures=True)


def _start_worker(threads: int) -> None:
    """A sweep worker's set-up: it dies with its parent (Linux), runs ``threads`` CPU threads
    (its environment already says so, before torch loads) and keeps each dataset it loads."""
    from contrastkit.data import cached_datasets

    _die_with_parent()
    import torch

    torch.set_num_threads(threads)
    cached_datasets().__enter__()  # for the worker's lifetime


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (``PR_SET_PDEATHSIG``), so a sweep
    killed by a scheduler leaves no worker behind; elsewhere, nothing."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request was made
        os._exit(1)


def _run_submitit(tasks: list[Task], started: Started, timeout_min: int
                  ) -> Iterator[tuple[Task, dict]]:
    """Each cell as a submitit job, all submitted at once; results as the jobs finish. A job
    cut off by its time limit leaves a checkpoint: running the sweep again resumes it.
    (One executor folder per sweep folder: ``OUT/submitit``.)"""
    from submitit.helpers import as_completed

    jobs = {}
    executors = {}
    for task in tasks:
        cell, out = task
        if out not in executors:
            executors[out] = submitit_executor(out / "submitit", timeout_min)
        started(task)
        jobs[executors[out].submit(run_cell, cell, out)] = task
    for job in as_completed(list(jobs), poll_frequency=1):
        yield jobs[job], job.result()


def submitit_executor(folder: Path, timeout_min: int):
    """The submitit executor of the cells' jobs: ``submitit.AutoExecutor(folder)``, which
    submits SLURM jobs where SLURM is available and runs local processes elsewhere, each
    with a time limit of ``timeout_min`` minutes. (To set a partition or GPUs, replace this
    function by one that also calls ``update_parameters``.)"""
    import submitit

    executor = submitit.AutoExecutor(folder=folder)
    executor.update_parameters(timeout_min=timeout_min)
    return executor


def run_cell(cell: Cell, out: str | Path) -> dict:
    """Run ``cell`` in its folder under ``out`` (resuming its checkpoint, if any), write its
    result.json last and atomically, and return the result. A finished cell is read, not
    run again."""
    out = Path(out)
    check_identity(cell, out)
    if is_finished(cell, out):
        return read_result(cell, out)
    _write_json_atomic(cell.folder(out) / IDENTITY, cell.identity())
    start = time.perf_counter()
    if cell.kind == "pretrain":
        metrics, facts = _pretrain_cell(cell, out)
    else:
        metrics = CELL_KINDS.get(cell.kind).run(cell, cell.folder(out), None)
        facts = {"steps": cell.steps}
    result = {"metrics": metrics, "cell": {**cell.as_dict(), **facts},
              "seconds": time.perf_counter() - start, "threads": _threads()}
    _write_json_atomic(cell.folder(out) / RESULT, result)
    return result


def _threads() -> int:
    """The CPU threads this process computes with (recorded: they change float rounding)."""
    import torch

    return torch.get_num_threads()


def smoke_recipe(recipe: Recipe, tier: str = "paper", out: str | Path = "runs/smoke",
                 data_dir: str | None = None) -> dict[str, dict]:
    """One short run of each cell of ``tier`` (its first seed), to check that the tier runs:
    a pretrain cell trains one epoch at batch size :data:`SMOKE_BATCH` without warm-up and
    without evaluation, in ``out/cells/...`` (one optimizer step on a training set of 8 to
    15 images, such as the tests' fake datasets; a whole epoch on real data); a cell of another
    kind runs one step. Nothing is written as a finished cell: the result is each cell's
    ``train_*`` (pretrain) or the kind's metrics, keyed by cell id. (A ``fixed: steps`` tier's
    epochs are not computed from the data: the smoke run sets them.)"""
    done = {}
    for cell in smoke_cells(recipe, tier, data_dir):
        if cell.kind != "pretrain":
            done[cell.cell_id] = CELL_KINDS.get(cell.kind).run(cell, None, 1)
        else:
            config = cell_config(cell, out, smoke=True)
            done[cell.cell_id] = _train_metrics(_train(config))
    return done


def smoke_cells(recipe: Recipe, tier: str, data_dir: str | None = None) -> list[Cell]:
    """The cells of :func:`smoke_recipe`: one seed per grid point, a ``fixed: steps`` tier
    taken as ``fixed: epochs`` (the smoke run sets the epochs)."""
    if recipe.fixed_for(tier) == "steps":
        smoke_tier = dataclasses.replace(recipe.tier(tier), fixed="epochs", steps=None)
        recipe = dataclasses.replace(recipe, tiers={**recipe.tiers, tier: smoke_tier})
    return recipe.cells(tier, seeds=1, data_dir=data_dir)


def cell_config(cell: Cell, out: str | Path, smoke: bool = False):
    """The ``PretrainConfig`` of a pretrain cell: its settings in its run folder, with its
    seed, without progress; ``smoke`` trains one epoch at batch ``SMOKE_BATCH``, no warm-up,
    in the main process (no DataLoader workers).
    A bad setting is a ``ValueError`` naming the cell."""
    from contrastkit.train import PretrainConfig

    folder = cell.folder(out)
    settings = {**cell.settings, "runs_dir": str(folder.parent), "name": folder.name,
                "seed": cell.seed, "progress": False}
    if smoke:
        settings.update(batch_size=SMOKE_BATCH, epochs=1, warmup_epochs=0, warmup_share=None,
                        num_workers=0)
    try:
        return PretrainConfig().with_overrides(settings)
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe} ({cell.tier}): {error}") from None


def _pretrain_cell(cell: Cell, out: Path) -> tuple[dict, dict]:
    """Train (or resume) and evaluate a pretrain cell, and judge whether it converged
    (:mod:`.convergence`): its metrics, and its steps, epochs, the convergence verdict in
    words and ``timing`` (the seconds of the ``pretrain`` call and of the evaluation, in this
    call)."""
    from contrastkit.evaluate import evaluate_run

    config = cell_config(cell, out)
    start = time.perf_counter()
    history = _train(config, [HalfWayProbe(config.run_dir, config.epochs, config.device)])
    trained = time.perf_counter()
    evaluation = evaluate_run(config.run_dir, seed=cell.seed, device=config.device,
                              progress=False, **cell.evaluate)
    metrics = {**_train_metrics(history),
               **{name: evaluation[name] for name in recipe_checks.PRETRAIN_METRICS
                  if name in evaluation}}
    verdict, words = converged(config.run_dir, config.epochs, history[-1]["loss"],
                               evaluation["linear_top1"])
    metrics.update(verdict)
    per_epoch = train_size(config.dataset, config.data_dir) // config.batch_size
    timing = {"pretrain_seconds": trained - start,
              "evaluate_seconds": time.perf_counter() - trained}
    return metrics, {"steps": config.epochs * per_epoch, "epochs": config.epochs,
                     "convergence": words, "timing": timing}


def _train(config, callbacks=()) -> list[dict]:
    """Pretrain ``config``'s run, from its last checkpoint if it has one, calling
    ``callbacks`` after each epoch; its history."""
    from contrastkit.train import pretrain
    from contrastkit.train.checkpoint import LAST

    resume = "last" if (config.run_dir / LAST).is_file() else None
    return pretrain(config, resume=resume, callbacks=callbacks).history


def _train_metrics(history: list[dict]) -> dict:
    """``train_<name>``: the last training epoch's in-batch values; ``train_seconds``, the
    epochs' training time summed, and ``train_peak_memory_mib``, the largest epoch peak (where
    the machine reports one)."""
    metrics = {f"train_{name}": history[-1][name] for name in _TRAIN_METRICS}
    metrics["train_seconds"] = sum(epoch["epoch_seconds"] for epoch in history)
    peaks = [epoch["peak_memory_mib"] for epoch in history if "peak_memory_mib" in epoch]
    if peaks:
        metrics["train_peak_memory_mib"] = max(peaks)
    return metrics


def _write_json_atomic(path: Path, content: dict) -> None:
    """Write ``content`` as JSON to ``path`` through a temporary file and a rename."""
    from contrastkit.train.folder_io import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(content, indent=1) + "\n")


def tidy_rows(recipe: Recipe, tier: str, cells: Iterable[Cell],
              results: dict[tuple[str, int], dict]) -> list[dict]:
    """One row per cell x seed x metric of :func:`row_metrics`: the :data:`ROW_COLUMNS` (a
    setting the cell does not have, such as a simulation's ``batch_size``, is ``None``; a
    pretrain cell's unset settings are the config's defaults), then one column per other axis
    of the tier. A cell that recorded several points (:func:`~.kinds.cell_points`) gives one
    row per point x seed x metric, its ``cell`` the point's id and its axes columns too."""
    others = [axis for axis in recipe.axes(tier) if axis not in ROW_COLUMNS]
    defaults = recipe_checks.pretrain_defaults() if recipe.kind == "pretrain" else {}
    rows = []
    for cell in cells:
        settings = {column: cell.settings.get(column, defaults.get(column))
                    for column in ("loss", "batch_size", "temperature", "vrns")}
        for axes, metrics in cell_points(results[key(cell)]["metrics"]):
            shared = {"recipe": recipe.name, "tier": tier,
                      "cell": point_id(cell.cell_id, axes), **settings}
            rows += _point_rows(recipe, cell, shared, metrics,
                                {**{axis: cell.axes.get(axis) for axis in others}, **axes})
    return rows


def row_metrics(recipe: Recipe) -> tuple[str, ...]:
    """The metrics of the tidy rows: the recipe's, and for pretraining recipes ``converged``
    (1 or 0 per cell and seed, :mod:`.convergence`), which the claims read."""
    extra = ("converged",) if recipe.kind == "pretrain" else ()
    return tuple(dict.fromkeys((*recipe.metrics, *extra)))


def _point_rows(recipe: Recipe, cell: Cell, shared: dict, metrics: dict, axes: dict
                ) -> list[dict]:
    """The rows of one point of a cell (one per metric of :func:`row_metrics`)."""
    rows = []
    for metric in row_metrics(recipe):
        if metric not in metrics:
            raise ValueError(f"cell {shared['cell']} seed {cell.seed} of {recipe.name} "
                             f"recorded no {metric!r} (it has {', '.join(metrics)})")
        rows.append({**shared, "seed": cell.seed, "metric": metric,
                     "value": float(metrics[metric]), **axes})
    return rows


def check_cells(recipe: Recipe, cells: list[Cell], out: str | Path,
                on_cell: Callable[[Cell], None] = lambda cell: None) -> None:
    """Build every cell without running it (``--dry-run``): a pretrain cell's config, dataset
    and backbone names and evaluation arguments; a cell of another kind is built and run for 0
    steps, which must record every metric of the recipe. The first error is raised."""
    from contrastkit.data import DATASETS
    from contrastkit.models import BACKBONES

    for cell in cells:
        on_cell(cell)
        if cell.kind != "pretrain":
            _check_recorded(recipe, cell, CELL_KINDS.get(cell.kind).run(cell, None, 0))
            continue
        config = cell_config(cell, out)
        DATASETS.get(config.dataset)
        BACKBONES.get(config.backbone)
        _check_evaluate(cell)


def _check_recorded(recipe: Recipe, cell: Cell, recorded: dict | list) -> None:
    """Every point a cell recorded has the kind's point axes and every metric of the recipe."""
    expected = list(CELL_KINDS.get(cell.kind).point_axes)
    for axes, metrics in cell_points(recorded):
        if list(axes) != expected:
            raise ValueError(f"cell {cell.cell_id} of {recipe.name} records a point with axes "
                             f"{', '.join(axes) or 'none'}; its kind {cell.kind} declares "
                             f"{', '.join(expected) or 'none'}")
        missing = [metric for metric in recipe.metrics if metric not in metrics]
        if missing:
            raise ValueError(f"cell {cell.cell_id} of {recipe.name} records no "
                             f"{', '.join(missing)} with its settings")


def _check_evaluate(cell: Cell) -> None:
    from contrastkit.checks.scalars import check_count, check_positive
    from contrastkit.evaluate.run import linear_protocol

    for name, value in cell.evaluate.items():
        if name == "knn_temperature":
            check_positive(f"evaluate.{name}", value)
        elif name not in ("linear_solver", "linear_epochs"):
            check_count(f"evaluate.{name}", value, 1)
    try:
        linear_protocol(cell.evaluate.get("linear_solver", "lbfgs"),
                        cell.evaluate.get("linear_epochs"))
    except ValueError as error:
        raise ValueError(f"evaluate of {cell.recipe}: {error}") from None
