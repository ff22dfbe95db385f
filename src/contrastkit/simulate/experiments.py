"""The simulator's experiments, as library functions (``contrastkit simulate`` calls them):

- :func:`minibatch_runs`: a loss optimized on free embeddings with the full batch and, given
  ``m``, with fixed mini-batches of size ``m`` (the central paper's Fig. 2 / Theorem 5.5);
- :func:`sigmoid_phase`: the sigmoid loss optimized over a grid of ``(N, t = b)``, next to the
  closed-form optimum (the sigmoid paper's Fig. 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from contrastkit import losses, theory
from contrastkit.checks.scalars import check_count, check_nonnegative, check_positive

from .embeddings import Loss, SimulationResult, check_batch_size, check_memory, optimize_embeddings


def loss_by_name(name: str, settings: Mapping[str, object] | None = None, vrns: float = 0.0,
                 n: int | None = None) -> losses.ContrastiveLoss:
    """The registered loss ``name`` (with those of ``settings`` it takes), plus
    ``vrns * VRNS(n)`` (Def. 5.7) when ``vrns > 0``. Free embeddings carry no labels, so the
    loss must be one that needs none."""
    cls = losses.get(name)
    if cls.uses_labels or cls.regularizer:
        usable = [other for other in losses.names(regularizers=False)
                  if not losses.get(other).uses_labels]
        raise ValueError(f"loss must be a loss that needs no labels ({', '.join(usable)}), "
                         f"got {name!r}")
    loss = losses.build(name, settings, **cls.training_options)
    if check_nonnegative("vrns", vrns) > 0:
        # n=None: VRNS refuses it with a ValueError naming n
        loss = loss + vrns * losses.VRNS(n=n)  # type: ignore[arg-type]
    return loss


def minibatch_runs(loss: Loss, n: int, d: int, m: int | None = None, **settings: Any
                   ) -> dict[str, SimulationResult]:
    """``loss`` optimized on ``n`` free pairs in ``R^d`` with the full batch and, given ``m``,
    with fixed mini-batches of size ``m`` (``settings``: those of
    :func:`~contrastkit.simulate.optimize_embeddings`). Keys name the runs."""
    check_memory(n, d, dtype=settings.get("dtype", torch.float64))  # before any run
    if m is not None:
        check_batch_size(m, n, fixed=True, name="m")
    runs = {"full batch": optimize_embeddings(loss, n, d, **settings)}
    if m is not None:
        runs[f"fixed mini-batches (m = {m})"] = optimize_embeddings(
            loss, n, d, batching="fixed", batch_size=m, **settings)
    return runs


@dataclass(frozen=True)
class SigmoidPhase:
    """The result of :func:`sigmoid_phase`: ``simulated[i, j]`` and ``predicted[i, j]`` are the
    normalized positive similarity ``s = (1 + mean u_i.v_i) / 2`` at ``t = b = ts[i]`` and
    ``N = ns[j]``, from optimization and from :func:`~contrastkit.theory.sigmoid_optimum`."""

    ns: np.ndarray
    ts: np.ndarray
    simulated: np.ndarray
    predicted: np.ndarray
    half_dim: bool
    settings: dict

    @property
    def largest_gap(self) -> float:
        """``max |simulated - predicted|`` over the grid."""
        return float(np.abs(self.simulated - self.predicted).max())

    def as_dict(self) -> dict:
        return {"N": self.ns.tolist(), "t": self.ts.tolist(),
                "s_simulated": self.simulated.tolist(),
                "s_theory_d_ge_N": self.predicted.tolist(), "half_dim": self.half_dim,
                **self.settings}


def sigmoid_phase(ns: Sequence[int], ts: Sequence[float] | np.ndarray, half_dim: bool = False,
                  steps: int = 400, lr: float = 0.1, optimizer: str = "adam", seed: int = 0,
                  cells: Callable = iter) -> SigmoidPhase:
    """For each ``N`` in ``ns`` and ``t = b`` in ``ts``, optimize the sigmoid loss (logit
    ``t cos - b``) on ``N`` free pairs in ``d = N`` (``d = ceil(N / 2)`` with ``half_dim``) and
    record the normalized positive similarity, beside the theory's optimum for ``d >= N``.

    ``cells`` wraps the iterable of grid cells, e.g. a progress bar (``rich.progress.track``).
    """
    sizes = np.array([check_count("N", n, 3) for n in ns])
    biases = np.array([check_positive("t", t) for t in ts])
    if not len(sizes) or not len(biases):
        raise ValueError("ns and ts must each hold at least one value")
    largest = int(sizes.max())  # refused before any cell runs, not when its turn comes
    check_memory(largest, math.ceil(largest / 2) if half_dim else largest)
    simulated = np.zeros((len(biases), len(sizes)))
    predicted = np.zeros_like(simulated)
    grid = [(i, j) for i in range(len(biases)) for j in range(len(sizes))]
    for i, j in cells(grid):
        n, t = int(sizes[j]), float(biases[i])
        d = math.ceil(n / 2) if half_dim else n
        result = optimize_embeddings(losses.SigLIP(scale=t, bias=-t), n, d, steps=steps, lr=lr,
                                     optimizer=optimizer, seed=seed)
        simulated[i, j] = (1 + result.stats.positive_mean) / 2
        predicted[i, j] = theory.sigmoid_optimum(n, t, t).normalized_positive
    settings = {"steps": steps, "lr": lr, "optimizer": optimizer, "seed": seed}
    return SigmoidPhase(sizes, biases, simulated, predicted, half_dim, settings)
