"""An ``lmcl_free`` cell of a recipe: the minimizer of LMCL's NCE loss (Chen, Niu, Gong, Li,
Yang, Sugiyama, "Large-Margin Contrastive Learning with Distance Polarization Regularizer",
ICML 2021, Eq. 1) over ``N`` free unit embeddings in ``R^d``, and how densely it covers what
Theorem 1 and Lemma 2 say it covers as ``N`` grows.

Over the paper's hypothesis set (every differentiable map to the unit sphere) the embeddings of
``N`` distinct points are free unit vectors, so the minimizer of Eq. 1 over the set is the
minimizer over free embeddings (:func:`contrastkit.simulate.optimize_embeddings`: ``u_i`` the
embedding of ``x_i``, ``v_i`` of its positive ``x_i^+``; the library's symmetric InfoNCE at
``temperature``, Eq. 1's being 1). The cell approximates that minimizer by ``restarts``
optimizations from independent random starts and keeps the one of the lowest final objective.
Of the kept embeddings ``u`` it records

- ``distance_cover``: Theorem 1's quantity, ``max over mu in [0, 1] of min over i < j of
  |D_ij - mu|`` with ``D_ij = (1 - u_i . u_j) / 2`` (:func:`distance_cover`);
- ``angle_cover``: Lemma 2's, the largest over the spherical coordinates of ``max over alpha of
  min over i of |theta_i - alpha|`` (:func:`angle_cover`);
- ``final_loss``, and the verdict of convergence rule 3 on the curves of the objective and of
  both covers over the kept run's steps (:mod:`contrastkit.experiments.convergence`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

from contrastkit.experiments.convergence import FREE_INPUTS, judge_curves
from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    import torch

    from contrastkit.experiments.recipe import Cell

METRICS = ("distance_cover", "angle_cover", "final_loss", "converged", *FREE_INPUTS)
#: The settings of a cell and their defaults (``N``, not ``n``: ``n`` is the summary's count of
#: seeds). ``steps``, ``lr``, ``optimizer`` and ``schedule`` are
#: :func:`~contrastkit.simulate.optimize_embeddings`'s.
DEFAULTS: dict[str, Any] = {"N": 16, "d": 2, "temperature": 1.0, "restarts": 3, "steps": 1000,
                             "lr": 0.05, "optimizer": "adam", "schedule": "cosine"}


def covering_radius(values, low: float, high: float, circular: bool = False) -> float:
    """``max over x in [low, high] of min over the values of |value - x|``: the largest
    distance from a point of the interval to the nearest value. ``circular``: ``low`` and
    ``high`` are one point (an angle on the circle), so the distance wraps around."""
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if ordered.size == 0:
        raise ValueError("values must hold at least one value")
    inner = float(np.diff(ordered).max(initial=0.0))
    if circular:
        wrap = (high - low) - float(ordered[-1] - ordered[0])
        return max(inner, wrap) / 2
    return max(float(ordered[0]) - low, high - float(ordered[-1]), inner / 2)


def distance_cover(u: torch.Tensor) -> float:
    """Theorem 1's ``max over mu in [0, 1] of min over i < j of |D_ij - mu|`` for the unit
    rows ``u`` (``D_ij = (1 - u_i . u_j) / 2``, Eq. 3): 0 when the distances are dense."""
    import torch

    u = torch.as_tensor(u, dtype=torch.float64)
    rows, columns = torch.triu_indices(u.shape[0], u.shape[0], offset=1)
    distances = ((1.0 - (u[rows] * u[columns]).sum(dim=1)) / 2).clamp(0.0, 1.0)
    return covering_radius(distances.numpy(), 0.0, 1.0)


def spherical_coordinates(u: torch.Tensor) -> torch.Tensor:
    """The spherical coordinates ``(theta^(1), ..., theta^(d-1))`` of the rows of ``u``
    (``(N, d)``, d >= 2), Lemma 2's: ``theta^(k) = arccos(u_k / |u_(k..d)|)`` in ``[0, pi]``
    for ``k <= d - 2``, and the last, ``atan2(u_d, u_(d-1))``, in ``[0, 2 pi)``."""
    import torch

    u = torch.as_tensor(u, dtype=torch.float64)
    tails = u.flip(1).pow(2).cumsum(1).flip(1).sqrt()  # |u_(k..d)|
    polar = [torch.arccos((u[:, k] / tails[:, k].clamp_min(1e-300)).clamp(-1.0, 1.0))
             for k in range(u.shape[1] - 2)]
    last = torch.remainder(torch.atan2(u[:, -1], u[:, -2]), 2 * math.pi)
    return torch.stack([*polar, last], dim=1)


def angle_cover(u: torch.Tensor) -> float:
    """Lemma 2's quantity for the unit rows ``u``: the largest over the spherical coordinates
    (:func:`spherical_coordinates`) of ``max over alpha of min over i of |theta_i - alpha|``,
    ``alpha`` in ``[0, pi]`` for the polar angles and on the circle for the last (``0`` and
    ``2 pi`` are one angle)."""
    theta = spherical_coordinates(u).numpy()
    last = theta.shape[1] - 1
    return max(covering_radius(theta[:, k], 0.0, 2 * math.pi if k == last else math.pi,
                               circular=k == last) for k in range(theta.shape[1]))


def free_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """Run one cell (see the module's text; ``folder`` is unused: it writes no file); ``steps``
    overrides the optimization's steps (0: only the starts)."""
    from contrastkit.checks.scalars import check_count
    from contrastkit.simulate import loss_by_name, optimize_embeddings

    settings = {**DEFAULTS, **cell.settings}
    if steps is not None:
        settings["steps"] = steps
    try:
        restarts = check_count("restarts", settings.pop("restarts"), 1)
        n, d = settings.pop("N"), settings.pop("d")
        loss = loss_by_name("info_nce", {"temperature": settings.pop("temperature")})
        runs = [optimize_embeddings(loss, n, d, seed=cell.seed * restarts + restart,
                                    observe=_covers, **settings)
                for restart in range(restarts)]
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {error}") from None
    kept = min(runs, key=lambda run: _curve(run.history, "loss")[-1])
    steps_done = _curve(kept.history, "step")
    verdict = judge_curves({name: (steps_done, _curve(kept.history, name))
                            for name in ("loss", "distance_cover", "angle_cover")})[0]
    return {**_covers(kept.u, kept.v), "final_loss": _curve(kept.history, "loss")[-1],
            **verdict}


def _curve(history: list, name: str) -> list[float]:
    """The recorded values of ``name`` over the run (every entry records it)."""
    return [cast(float, entry[name]) for entry in history]


def _covers(u, v) -> dict[str, float]:
    """Both covers of the anchors' embeddings ``u`` (``v``, the positives', unused)."""
    return {"distance_cover": distance_cover(u), "angle_cover": angle_cover(u)}


CELL_KINDS.register("lmcl_free", CellKind(
    run=free_cell, settings=lambda: tuple(DEFAULTS), metrics=METRICS,
    data="free unit embeddings (simulation of Eq. 1's minimizer)",
    default_steps=lambda: int(DEFAULTS["steps"])))
