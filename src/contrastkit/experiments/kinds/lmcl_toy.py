"""An ``lmcl_toy`` cell of a recipe: one trial of LMCL's toy experiment (Chen, Niu, Gong, Li,
Yang, Sugiyama, "Large-Margin Contrastive Learning with Distance Polarization Regularizer",
ICML 2021, Sec. 5.1, Table 1 and Fig. 3) for one method on one toy set.

A trial draws the toy set with the cell's seed (:func:`contrastkit.data.toy2d.toy_set`), then

- ``method: euclidean``: K-means on the raw points (the paper's "Euclidean space" row);
- ``method: cl``: learns the linear embedding with the NCE loss alone, ``method: lmcl`` with
  the distance-polarization regularizer added at weight ``lam``
  (:func:`contrastkit.simulate.linear_embedding.train_linear_embedding`), then K-means on the
  unit embeddings.

The same seed gives the same data, start and noise to every method, so the methods' trials pair
up. The cell writes ``points.npz`` (``points``, ``embedded``, ``labels``) to its folder for the
scatter figure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from contrastkit.experiments.convergence import TOY_INPUTS, judge_curves, untrained
from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METHODS = ("euclidean", "cl", "lmcl")
#: What a cell records: the K-means accuracy (in %, as the paper's Table 1), the fraction of
#: pairs of distinct points whose distance lies inside the margin band, the last step's
#: objective (0 for ``euclidean``), and whether the training converged
#: (:mod:`contrastkit.experiments.convergence`, on the objective of every step; ``euclidean``
#: trains nothing and records only the rule's version and ``converged`` 1).
METRICS = ("kmeans_accuracy", "margin_fraction", "final_loss", "converged", *TOY_INPUTS)
#: The generators' settings, by toy set.
DATA_SETTINGS = {"three_bars": ("n_per_class", "length", "spacing", "noise"),
                 "nested_moons": ("n_per_class", "noise")}
TRAIN_SETTINGS = ("steps", "lr", "batch_size", "augment_noise", "temperature", "reduction",
                  "init_scale")
POINTS_FILE = "points.npz"
DEFAULT_STEPS = 2000


def toy_settings() -> tuple[str, ...]:
    """The settings an ``lmcl_toy`` recipe may set: ``dataset``, ``method``, the generators'
    parameters, the training's, ``lam`` (LMCL's lambda), ``delta_plus`` and ``delta_minus``
    (the margin band, also that of ``margin_fraction``) and ``kmeans_restarts``."""
    data = dict.fromkeys(name for names in DATA_SETTINGS.values() for name in names)
    return ("dataset", "method", *data, *TRAIN_SETTINGS, "lam", "delta_plus", "delta_minus",
            "kmeans_restarts")


def toy_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """Run one trial (see the module's text); ``steps`` overrides the training steps (0: build
    and check only)."""
    import numpy as np

    from contrastkit.data.toy2d import toy_set
    from contrastkit.evaluate.clustering import kmeans_accuracy
    from contrastkit.geometry import margin_fraction

    settings = dict(cell.settings)
    dataset, method = settings.pop("dataset", None), settings.pop("method", None)
    _check_choices(cell, dataset, method, settings)
    points, labels = toy_set(dataset, seed=cell.seed, **{
        name: settings.pop(name) for name in DATA_SETTINGS[dataset] if name in settings})
    band = (settings.pop("delta_plus", 0.1), settings.pop("delta_minus", 0.5))
    restarts = settings.pop("kmeans_restarts", 10)
    lam = settings.pop("lam", 0.1)
    if steps is not None:
        settings["steps"] = steps
    embedded, losses = _embed(method, points, lam, band, settings, cell.seed)
    verdict = untrained() if losses is None else judge_curves(
        {"loss": (range(1, len(losses) + 1), losses)})[0]
    metrics = {"kmeans_accuracy": 100 * kmeans_accuracy(embedded, labels, cell.seed, restarts),
               "margin_fraction": float(margin_fraction(embedded, *band)),
               "final_loss": 0.0 if losses is None else (losses[-1] if losses else math.nan),
               **verdict}
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / POINTS_FILE, points=points.numpy(), embedded=embedded.numpy(),
                 labels=labels.numpy())
    return metrics


def _check_choices(cell: Cell, dataset, method, settings: dict) -> None:
    """``dataset`` and ``method`` are known, and every data setting is one of ``dataset``'s."""
    where = f"cell {cell.cell_id} of {cell.recipe}"
    if dataset not in DATA_SETTINGS:
        raise ValueError(f"{where}: dataset must be one of {', '.join(DATA_SETTINGS)}, got "
                         f"{dataset!r}")
    if method not in METHODS:
        raise ValueError(f"{where}: method must be one of {', '.join(METHODS)}, got {method!r}")
    every = {name for names in DATA_SETTINGS.values() for name in names}
    foreign = sorted((every - set(DATA_SETTINGS[dataset])) & set(settings))
    if foreign:
        raise ValueError(f"{where}: dataset {dataset} does not take {', '.join(foreign)}")


def _embed(method: str, points, lam: float, band: tuple[float, float], settings: dict,
           seed: int):
    """The points K-means clusters and the objective of every training step (``None``
    without training)."""
    from contrastkit.simulate.linear_embedding import train_linear_embedding

    if method == "euclidean":
        return points, None
    run = train_linear_embedding(points, polarization=lam if method == "lmcl" else 0.0,
                                 delta_plus=band[0], delta_minus=band[1], seed=seed, **settings)
    return run.embed(points), run.losses


CELL_KINDS.register("lmcl_toy", CellKind(
    run=toy_cell, settings=toy_settings, metrics=METRICS,
    data="2-D toy sets (Three-Bars, Nested-Moons), drawn per seed",
    default_steps=lambda: DEFAULT_STEPS))
