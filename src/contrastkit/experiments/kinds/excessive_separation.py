"""Excessive separation of negative pairs in full-batch CL on free embeddings (Lee, Lim, Lee,
Sohn, "On the Similarities of Embeddings in Contrastive Learning", ICML 2025,
arXiv:2506.09781: Theorem 5.3 and Example 5.4; Theorem 5.1 (ii) and (iii) for the other side).

A cell optimizes ``n`` free pairs (the setting ``N``) of unit embeddings in ``R^d`` (``d >= n``,
Theorem 5.3's assumption; ``d = n`` unless set) on the full batch with
:func:`contrastkit.simulate.optimize_embeddings`, on the sigmoid loss of Example 5.4 (eq. 9,
temperature ``t``, bias ``b``): Def. 3.2 with ``phi(x) = -log(1 + exp(-t x + b))`` and
``psi(x) = (n-1) log(1 + exp(t x - b))``, its negatives chosen by ``negatives``:

- ``cross``: ``(c1, c2) = (1, 0)``, the sigmoid loss itself (:class:`contrastkit.losses.SigLIP`
  with ``scale = t``, ``bias = -b``), the loss of Theorem 5.3;
- ``cross+within``: ``(c1, c2) = (1, 1)`` (:func:`contrastkit.losses.ind_add` with the same
  ``phi`` and ``psi``), the paper's remedy: with within-view negatives Theorem 5.1 (ii) gives
  the simplex ETF whatever ``t`` and ``b``.

The cell records one point whose axis ``condition`` says whether condition (8) holds at
``(n, t, b)`` (:func:`contrastkit.theory.excessive_separation` on ``phi`` and ``psi``; it must
agree with the exact form (10), :func:`contrastkit.theory.sigmoid_excessive_separation`, else
the point is too close to the threshold to be decided and the cell is an error): ``holds`` or
``fails``. Beside the measured similarities it records the theory's optimum: for ``cross``
the sigmoid loss's exact optimum on ``d >= n`` (:func:`contrastkit.theory.sigmoid_optimum`:
a CCEM, Lee, Chang, Sohn, AISTATS 2024, Corollary 2 and Lemma 1), for ``cross+within`` the
simplex ETF.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METRICS = ("pos_mean", "neg_mean", "neg_var", "pos_gap", "neg_excess", "theory_pos",
           "theory_neg", "simplex_neg", "loss", "theory_loss", "condition_margin")
POINT_AXES = ("condition",)
NEGATIVES = ("cross", "cross+within")
#: ``optimize_embeddings`` arguments that a cell sets itself.
RUNNER_ARGS = ("loss", "n", "d", "batching", "batch_size", "seed", "dtype", "record_every",
               "observe")


@functools.cache
def _optimize_parameters() -> dict[str, inspect.Parameter]:
    from contrastkit.simulate import optimize_embeddings

    return dict(inspect.signature(optimize_embeddings).parameters)


def separation_settings() -> tuple[str, ...]:
    """The settings a recipe of this kind may set: ``N`` (the number of pairs, the papers'
    ``n``: a setting named ``n`` would clash with the summary's count of seeds), ``d``, ``t``,
    ``b``, ``negatives`` and the optimization's
    (:func:`contrastkit.simulate.optimize_embeddings`: ``steps``, ``lr``, ``optimizer``,
    ``schedule``)."""
    optimization = [name for name in _optimize_parameters() if name not in RUNNER_ARGS]
    return ("N", "d", "t", "b", "negatives", *optimization)


def condition_margin(n: int, t: float, b: float) -> float:
    """``log((n-2)/2) - log((1 + exp(t/(n-1) + b)) / (1 + exp(t - b)))``: positive exactly
    when condition (10) of Example 5.4 holds (``n >= 3``), in log space."""
    def softplus(x: float) -> float:
        return max(x, 0.0) + math.log1p(math.exp(-abs(x)))

    return math.log((n - 2) / 2) - (softplus(t / (n - 1) + b) - softplus(t - b))


def sigmoid_functions(n: int, t: float, b: float, module):
    """Example 5.4's ``phi`` and ``psi`` in the array library ``module`` (``numpy`` or
    ``torch.nn.functional`` style: ``module.logaddexp`` or ``module.softplus``)."""
    if hasattr(module, "softplus"):
        return (lambda x: -module.softplus(b - t * x),
                lambda x: (n - 1) * module.softplus(t * x - b))
    return (lambda x: -module.logaddexp(0.0, b - t * x),
            lambda x: (n - 1) * module.logaddexp(0.0, t * x - b))


def separation_point(n: int, d: int, t: float, b: float, negatives: str, seed: int,
                     **optimization) -> dict:
    """The cell's point: optimize, measure, and set the theory beside (see the module's
    text)."""
    import numpy as np
    import torch.nn.functional

    from contrastkit import losses, theory
    from contrastkit.checks.scalars import check_choice, check_count, check_positive, check_real
    from contrastkit.simulate import optimize_embeddings

    n = check_count("N", n, minimum=3)
    d = check_count("d", d, minimum=1)
    if d < n:
        raise ValueError(f"d must be >= N = {n} (Theorem 5.3 assumes d >= n), got {d}")
    t, b = check_positive("t", t), check_real("b", b)
    negatives = check_choice("negatives", negatives, NEGATIVES)
    phi_np, psi_np = sigmoid_functions(n, t, b, np)
    holds = theory.excessive_separation(phi_np, psi_np, n)
    if holds != theory.sigmoid_excessive_separation(n, t, b):
        raise ValueError(f"(n, t, b) = ({n}, {t}, {b}) is too close to the threshold of "
                         f"condition (8) for its numerical derivatives to decide it")
    optimum = theory.sigmoid_optimum(n, t, b)
    simplex = -1.0 / (n - 1)
    loss: Callable[..., torch.Tensor]
    if negatives == "cross":
        loss = losses.SigLIP(scale=t, bias=-b)
        theory_pos, theory_neg, theory_loss = (optimum.positive_similarity,
                                               optimum.negative_similarity, optimum.loss)
    else:
        phi, psi = sigmoid_functions(n, t, b, torch.nn.functional)
        loss = functools.partial(losses.ind_add, phi=phi, psi=psi, c1=1, c2=1, n=n)
        phi_np, psi_np = sigmoid_functions(n, t, b, np)
        theory_pos, theory_neg = 1.0, simplex
        theory_loss = float(-phi_np(1.0) + 2 * psi_np(simplex))  # eq. 3 at the ETF
    result = optimize_embeddings(loss, n, d, seed=seed, **optimization)
    stats = result.stats
    return {"axes": {"condition": "holds" if holds else "fails"}, "metrics": {
        "pos_mean": stats.positive_mean, "neg_mean": stats.negative_mean,
        "neg_var": stats.negative_var, "pos_gap": 1.0 - stats.positive_mean,
        "neg_excess": simplex - stats.negative_mean, "theory_pos": theory_pos,
        "theory_neg": theory_neg, "simplex_neg": simplex,
        "loss": float(loss(result.u, result.v)), "theory_loss": theory_loss,
        "condition_margin": condition_margin(n, t, b)}}


def separation_cell(cell: Cell, folder=None, steps: int | None = None) -> list[dict]:
    """Run a cell with its seed; ``steps`` overrides its optimization steps (it writes no
    file: ``folder`` is unused)."""
    settings = dict(cell.settings)
    missing = [name for name in ("N", "t", "b") if name not in settings]
    if missing:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: an excessive_separation cell "
                         f"needs {', '.join(missing)} in base, set or grid")
    if steps is not None:
        settings["steps"] = steps
    settings.setdefault("d", settings["N"])
    settings.setdefault("negatives", "cross")
    try:
        return [separation_point(settings.pop("N"), seed=cell.seed, **settings)]
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {error}") from None


CELL_KINDS.register("excessive_separation", CellKind(
    run=separation_cell, settings=separation_settings, metrics=METRICS,
    data="free embeddings (simulation)",
    default_steps=lambda: _optimize_parameters()["steps"].default, point_axes=POINT_AXES))
