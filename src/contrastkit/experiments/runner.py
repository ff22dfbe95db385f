"""Running a recipe's cells: each one an ordinary run folder, finished cells skipped,
interrupted ones resumed, in one process, in ``jobs`` parallel processes, or as submitit jobs.

The folder of a cell is ``OUT/cells/<cell_id>/seed-<seed>/`` (:meth:`Cell.folder`). A pretrain
cell is an ordinary ``pretrain`` run there (``runs_dir=OUT/cells/<cell_id>``,
``name=seed-<seed>``, ``seed=<seed>``, ``progress=false``) followed by ``evaluate_run``
(eval.json); a cell of another kind runs its kind's function (:mod:`.kinds`). Then
``result.json`` = ``{"metrics": {...}, "cell": {...}, "seconds": ...}`` is written (``metrics``
a list of points for a kind with point axes, :func:`.kinds.cell_points`; ``seconds`` its
wall time in the call that finished it, ``threads``, and ``commit`` and ``source_dirty``, the
code that trained it: :func:`.evidence.source_commit`), last and
atomically: a cell is finished iff its result.json exists. A cell with a run folder but no
result.json is resumed from its last checkpoint (``pretrain(config, resume="last")``, which
returns at once when training had completed), then evaluated. Killing a sweep and starting it
again therefore loses at most the cells' unsaved progress and repeats nothing finished. Cells
that are the same run are trained once (:mod:`.same_runs`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.files import write_json_atomic
from contrastkit.interrupts import sigint_stops, stopping

from . import recipe_checks
from .cell_folders import (
    IDENTITY,
    RESULT,
    SMOKE_BATCH,
    cell_config,
    check_cell_files,
    check_identity,
    is_finished,
    key,
    read_result,
)
from .convergence_record import HalfWayProbe, converged
from .dry_run import check_cells
from .evidence import source_commit
from .kinds import CELL_KINDS
from .launchers import Task, check_launch, launch
from .progress import SweepProgress
from .recipe import Cell, Recipe, train_size
from .same_runs import adopt, share_runs
from .tidy import row_metrics, tidy_rows

# The runner's surface, some of it kept in the modules it is built from.
__all__ = ["MAX_SEEDS", "SMOKE_BATCH", "Sweep", "cell_config", "check_cells",
           "check_identity", "check_launch", "check_seeds", "estimate_minutes", "is_finished",
           "key", "read_result", "row_metrics", "run_cell", "run_cells", "run_recipe",
           "run_sweeps", "smoke_cells", "smoke_recipe", "tidy_rows"]

_TRAIN_METRICS = ("loss", "neg_sim_var", "neg_sim_mean", "pos_sim_mean")
#: The last epoch's values that a run records only sometimes: the SigLIP phase record (a run
#: of the sigmoid loss: its (t, b), the theory's optimum there and the measured similarities).
_OPTIONAL_TRAIN_METRICS = ("siglip_t", "siglip_b", "siglip_optimum_s", "siglip_predicted_pos",
                           "siglip_predicted_neg", "siglip_measured_pos", "siglip_measured_neg")
#: The most seeds per cell a sweep takes: each seed is a run of every cell, so a count above
#: it is a slip of the keyboard (a million seeds would be a million runs per cell).
MAX_SEEDS = 1000


def check_seeds(seeds: int | None) -> None:
    """``seeds`` is ``None`` (the tier's) or a count from 1 to :data:`MAX_SEEDS`."""
    from contrastkit.checks.scalars import check_count

    if seeds is None:
        return
    check_count("seeds", seeds, 1)
    if seeds > MAX_SEEDS:
        raise ValueError(f"seeds must be at most {MAX_SEEDS} (each seed is a run of every "
                         f"cell), got {seeds}")


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
    check_seeds(seeds)
    cells = recipe.cells(tier, seeds, data_dir)
    results = run_cells(cells, out, jobs, launcher, progress,
                        estimate_minutes(recipe, tier, seeds) * 60)
    return tidy_rows(recipe, tier, cells, results)


def estimate_minutes(recipe: Recipe, tier: str, seeds: int | None = None) -> float:
    """The recipe's estimate of the whole tier, scaled from its seeds to ``seeds``."""
    chosen = recipe.tier(tier)
    return chosen.estimate_minutes * len(recipe.seeds(tier, seeds)) / chosen.seeds


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
    progress line counts the cells of all sweeps and, with several sweeps, the sweeps done.
    SIGINT stops the sweep (``KeyboardInterrupt``) also in a process started with it ignored
    (:func:`contrastkit.interrupts.sigint_stops`)."""
    for sweep in sweeps:
        for cell in sweep.cells:
            check_identity(cell, sweep.out)
    results = [{key(cell): read_result(cell, sweep.out) for cell in sweep.cells
                if is_finished(cell, sweep.out)} for sweep in sweeps]
    # a cell that is the same run as another of its sweep takes that run (same_runs)
    waiting = [share_runs(sweep.cells, sweep.out, done)
               for sweep, done in zip(sweeps, results, strict=True)]
    queued = {(index, key(twin)) for index, by_source in enumerate(waiting)
              for twins in by_source.values() for twin in twins}
    todo = [(index, cell) for index, sweep in enumerate(sweeps) for cell in sweep.cells
            if key(cell) not in results[index] and (index, key(cell)) not in queued]
    left = [len(sweep.cells) - len(done) for sweep, done in zip(sweeps, results, strict=True)]
    total = sum(len(sweep.cells) for sweep in sweeps)
    # A submitit job's time limit: thrice the estimate per cell, at least an hour.
    limit = max(60, math.ceil(3 * estimate_seconds / 60 / max(total, 1)))
    recipes = len(sweeps) if len(sweeps) > 1 else None
    sweep_of = {(sweeps[index].out, key(cell)): index for index, cell in todo}
    first_start: dict[int, float] = {}
    with sigint_stops(), SweepProgress(total, total - len(todo) - len(queued),
                                       estimate_seconds, progress, recipes=recipes) as shown:
        def started(task: Task) -> None:
            first_start.setdefault(sweep_of[task[1], key(task[0])], time.perf_counter())
            shown.started(_label(task[0]))

        def record(index: int, cell: Cell, result: dict) -> None:
            results[index][key(cell)] = result
            shown.finished(_label(cell), result["seconds"], result.get("same_run_as"))
            left[index] -= 1
            if left[index] == 0:
                shown.recipe_finished()
                on_sweep_done(index, results[index], time.perf_counter() - first_start[index])

        for index, count in enumerate(left):
            if count == 0:
                shown.recipe_finished()
                on_sweep_done(index, results[index], 0.0)
        tasks = [(cell, sweeps[index].out) for index, cell in todo]
        with launch(tasks, run_cell, jobs, launcher, started, limit) as finished:
            for (cell, out), result in finished:
                index = sweep_of[out, key(cell)]
                record(index, cell, result)
                for twin in waiting[index].get(key(cell), []):
                    record(index, twin, adopt(twin, cell, out, result))
    return results


def _label(cell: Cell) -> str:
    return f"{cell.recipe} {cell.cell_id} seed {cell.seed}"


def run_cell(cell: Cell, out: str | Path) -> dict:
    """Run ``cell`` in its folder under ``out`` (resuming its checkpoint, if any), write its
    result.json last and atomically, and return the result. A finished cell is read, not
    run again."""
    out = Path(out)
    check_identity(cell, out)
    if is_finished(cell, out):
        return read_result(cell, out)
    check_cell_files(cell, out)
    write_json_atomic(cell.folder(out) / IDENTITY, cell.identity())
    start = time.perf_counter()
    if cell.kind == "pretrain":
        metrics, facts = _pretrain_cell(cell, out)
    else:
        metrics = CELL_KINDS.get(cell.kind).run(cell, cell.folder(out), None)
        facts = {"steps": cell.steps}
    commit, dirty = source_commit()
    result = {"metrics": metrics, "cell": {**cell.as_dict(), **facts},
              "seconds": time.perf_counter() - start, "threads": _threads(),
              "commit": commit, "source_dirty": dirty}
    write_json_atomic(cell.folder(out) / RESULT, result)
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
    epochs are not computed from the data: the smoke run sets them.) A pretrain cell's
    checkpoints are deleted once it has run (its ``config.yaml`` and ``metrics.jsonl`` stay):
    a one-step run is not worth resuming, and a paper tier's ResNet-50 with its optimizer
    state takes 322 MB a cell, over 6 GB for a 20-cell tier."""
    done = {}
    for cell in smoke_cells(recipe, tier, data_dir):
        if cell.kind != "pretrain":
            done[cell.cell_id] = CELL_KINDS.get(cell.kind).run(cell, None, 1)
        else:
            config = cell_config(cell, out, smoke=True)
            done[cell.cell_id] = _train_metrics(_train(config))
            for checkpoint in Path(config.run_dir).glob("*.pt"):
                checkpoint.unlink()
    return done


def smoke_cells(recipe: Recipe, tier: str, data_dir: str | None = None) -> list[Cell]:
    """The cells of :func:`smoke_recipe`: one seed per grid point, a ``fixed: steps`` tier
    taken as ``fixed: epochs`` (the smoke run sets the epochs)."""
    if recipe.fixed_for(tier) == "steps":
        smoke_tier = dataclasses.replace(recipe.tier(tier), fixed="epochs", steps=None)
        recipe = dataclasses.replace(recipe, tiers={**recipe.tiers, tier: smoke_tier})
    return recipe.cells(tier, seeds=1, data_dir=data_dir)


def _pretrain_cell(cell: Cell, out: Path) -> tuple[dict, dict]:
    """Train (or resume) and evaluate a pretrain cell, and judge whether it converged
    (:mod:`.convergence_record`; a text-pair run has no linear probe, so no half-way probe:
    it is judged by its curves, its held-out nDCG@10 among them with ``online_probe=true``):
    its metrics, and its steps, epochs, the convergence verdict in
    words and ``timing`` (the seconds of the ``pretrain`` call and of the evaluation, in this
    call)."""
    from contrastkit.evaluate import evaluate_run

    config = cell_config(cell, out)
    start = time.perf_counter()
    callbacks = []
    if config.task != "text_pairs":  # a sentence encoder has no classes to probe
        half_way_probe = HalfWayProbe(config.run_dir, config.epochs, config.device)
        half_way_probe.catch_up()
        callbacks.append(half_way_probe)
    history = _train(config, callbacks)
    trained = time.perf_counter()
    evaluation = evaluate_run(config.run_dir, seed=cell.seed, device=config.device,
                              progress=False, **cell.evaluate)
    metrics = {**_train_metrics(history),
               **{name: evaluation[name] for name in recipe_checks.PRETRAIN_METRICS
                  if name in evaluation}}
    verdict, words = converged(config.run_dir, config.epochs, evaluation.get("linear_top1"))
    metrics.update(verdict)
    per_epoch = train_size(config.dataset, config.data_dir) // config.batch_size
    timing = {"pretrain_seconds": trained - start,
              "evaluate_seconds": time.perf_counter() - trained}
    return metrics, {"steps": config.epochs * per_epoch, "epochs": config.epochs,
                     "convergence": words, "timing": timing}


def _train(config: Any, callbacks: Sequence[Callable] = ()) -> list[dict]:
    """Pretrain ``config``'s run, from its last checkpoint if it has one, calling
    ``callbacks`` after each epoch; its history. A run stopped by a signal (after its
    checkpoint) raises :class:`contrastkit.interrupts.Stopped`: the sweep stops, and the same
    sweep started again resumes the run."""
    from contrastkit.train import TrainingStopped, pretrain
    from contrastkit.train.checkpoint import Advice, has_checkpoint
    from contrastkit.train.run_folder import RunFolderInUse

    resume = "last" if has_checkpoint(config.run_dir) else None
    try:
        return pretrain(config, resume=resume, callbacks=callbacks).history
    except TrainingStopped as stopped:  # its advice is pretrain's; the sweep's is to rerun it
        raise stopping(stopped.signal_number) from None
    except Advice as advice:  # a damaged checkpoint: what to do, in a sweep's terms
        raise advice.reworded(SWEEP_OPTIONS) from None
    except RunFolderInUse as in_use:  # another sweep in this folder: another out, not name=
        raise RunFolderInUse(in_use.run_dir, in_use.holder, "out") from None


#: How a sweep words the options a checkpoint's error advises (see
#: :class:`contrastkit.train.checkpoint.Advice`): it resumes a cell from its last.pt alone, and
#: runs a cell whose folder is gone from the start.
SWEEP_OPTIONS = {"resume": "the same command",
                 "use": "the same command after renaming the cell's {}.pt to last.pt",
                 "overwrite": "the same command after deleting the cell's folder"}


def _train_metrics(history: list[dict]) -> dict:
    """``train_<name>``: the last training epoch's in-batch values (and its SigLIP phase record,
    where it has one); ``train_seconds``, the
    epochs' training time summed, and ``train_peak_memory_mib``, the largest epoch peak (where
    the machine reports one)."""
    metrics = {f"train_{name}": history[-1][name] for name in _TRAIN_METRICS}
    metrics.update({f"train_{name}": history[-1][name] for name in _OPTIONAL_TRAIN_METRICS
                    if name in history[-1]})
    metrics["train_seconds"] = sum(epoch["epoch_seconds"] for epoch in history)
    peaks = [epoch["peak_memory_mib"] for epoch in history if "peak_memory_mib" in epoch]
    if peaks:
        metrics["train_peak_memory_mib"] = max(peaks)
    return metrics


