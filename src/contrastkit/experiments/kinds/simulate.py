"""A simulate cell of a recipe: free embeddings optimized with the full batch and with fixed
mini-batches (:func:`contrastkit.simulate.minibatch_runs`), beside the theory's values (Lee,
Lim, Lee, Sohn, "On the Similarities of Embeddings in Contrastive Learning", ICML 2025,
arXiv:2506.09781: Theorem 5.1, the full-batch optimum, and Theorem 5.5, the fixed-mini-batch
variance bounds; the paper's Fig. 2)."""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

#: What a simulate cell records: the full-batch and fixed-mini-batch runs' statistics and the
#: theory's values (Theorems 5.1 and 5.5 of the central paper).
METRICS = ("full_pos_mean", "full_neg_mean", "full_neg_var", "mini_pos_mean", "mini_neg_mean",
           "mini_neg_var", "theory_full_neg_mean", "theory_mini_var_low", "theory_mini_var_high")
#: ``optimize_embeddings`` arguments that a simulate cell sets itself.
RUNNER_ARGS = ("loss", "n", "d", "batching", "batch_size", "seed", "dtype", "record_every",
               "observe")


@functools.cache
def _optimize_parameters() -> dict[str, inspect.Parameter]:
    from contrastkit.simulate import optimize_embeddings

    return dict(inspect.signature(optimize_embeddings).parameters)


def simulate_settings() -> tuple[str, ...]:
    """The settings a simulate recipe may set: the loss (``loss``, its hyperparameters,
    ``vrns``, as :func:`contrastkit.simulate.loss_by_name` takes them), ``n``, ``d``, ``m``
    (:func:`contrastkit.simulate.minibatch_runs`) and the optimization's arguments
    (:func:`contrastkit.simulate.optimize_embeddings`: ``steps``, ``lr``, ``optimizer``,
    ``schedule``)."""
    from contrastkit.train.config import LOSS_SETTINGS

    optimization = [name for name in _optimize_parameters() if name not in RUNNER_ARGS]
    return ("loss", *LOSS_SETTINGS, "vrns", "n", "d", "m", *optimization)


def simulate_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """Run a simulate cell (full batch, and fixed mini-batches of size ``m`` if set) with its
    seed; ``steps`` overrides its optimization steps (it writes no file: ``folder`` is
    unused). Its metrics: the final statistics of both runs and the theory's values (central
    paper, Theorems 5.1 and 5.5)."""
    from contrastkit import theory
    from contrastkit.simulate import minibatch_runs

    settings = dict(cell.settings)
    loss, n, d, m = _simulation_loss(cell, settings)
    if steps is not None:
        settings["steps"] = steps
    runs = list(minibatch_runs(loss, n, d, m, seed=cell.seed, **settings).values())
    metrics = {"theory_full_neg_mean": -1 / (n - 1), **_run_stats("full", runs[0])}
    if m is not None:
        bounds = theory.minibatch_variance_bounds(n, m)
        metrics.update(_run_stats("mini", runs[1]), theory_mini_var_low=bounds.low,
                       theory_mini_var_high=bounds.high)
    return metrics


def _simulation_loss(cell: Cell, settings: dict):
    """The loss, ``n``, ``d`` and ``m`` of a simulate cell, removed from ``settings`` (which
    keeps the optimization's arguments). A loss setting the loss does not take is an error."""
    from contrastkit import losses
    from contrastkit.simulate import loss_by_name
    from contrastkit.train.config import LOSS_SETTINGS

    missing = [name for name in ("n", "d") if name not in settings]
    if missing:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: a simulation needs "
                         f"{' and '.join(missing)} in base, set or grid")
    name = settings.pop("loss", "simclr")
    chosen = {key: settings.pop(key) for key in list(settings) if key in LOSS_SETTINGS}
    unused = sorted(set(chosen) - set(losses.get(name).hyperparameters))
    if unused:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: loss {name} does not take "
                         f"{', '.join(unused)}")
    n, d, m = settings.pop("n"), settings.pop("d"), settings.pop("m", None)
    return loss_by_name(name, chosen, vrns=settings.pop("vrns", 0.0), n=n), n, d, m


def _run_stats(prefix: str, run) -> dict:
    stats = run.stats
    return {f"{prefix}_pos_mean": stats.positive_mean, f"{prefix}_neg_mean": stats.negative_mean,
            f"{prefix}_neg_var": stats.negative_var}


CELL_KINDS.register("simulate", CellKind(
    run=simulate_cell, settings=simulate_settings, metrics=METRICS,
    data="free embeddings (simulation)",
    default_steps=lambda: _optimize_parameters()["steps"].default))
