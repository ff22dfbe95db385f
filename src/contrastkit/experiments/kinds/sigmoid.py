"""The sigmoid loss's optimum over a sweep of ``t = b`` (Lee, Chang & Sohn, "Analysis of Using
Sigmoid Loss for Contrastive Learning", AISTATS 2024, arXiv:2402.12613: Theorem 2, Figs. 2-3;
Corollaries 1, 3 and 4).

A cell is one ``(dim, N)`` (the setting is ``N``, the paper's letter: ``n`` would clash with
the summary's count of seeds); its ``t_count`` temperatures ``t = b`` from ``t_min`` to ``t_max``
are one batch of problems optimized together (:mod:`contrastkit.simulate.sigmoid`), and each
is a point of the results with axes ``d``, ``t``, ``b`` and ``regime`` (Theorem 2's regime at
``(n, t)``: ``etf``, ``intermediate`` or ``antipodal``, from
:func:`contrastkit.theory.sigmoid_optimum`). Its metrics: the measured normalized positive
similarity ``s = (1 + mean u_i.v_i) / 2`` and loss, and the theory's (for ``d >= n``; a lower
bound of the loss in any ``d``), and ``etf_deviation``, the distance of the embeddings from one
simplex ETF shared by both views (:func:`contrastkit.simulate.sigmoid.etf_deviation`).

- ``sigmoid_free``: free unit embeddings, the paper's projected gradient descent (Fig. 2);
  ``loss: infonce`` optimizes the paper's InfoNCE (Eq. 2) at temperature ``t`` instead, its
  theory the CCEM's minimum (Corollary 3, :func:`contrastkit.theory.infonce_ccem_minimum`) and
  ``regime`` still the sigmoid loss's at ``(N, t)``, so that the two losses' optima can be set
  side by side (Corollary 4);
- ``sigmoid_encoder``: a two-layer ReLU encoder on Gaussian inputs (Fig. 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METRICS = ("s_measured", "s_theory", "loss_measured", "loss_theory", "etf_deviation")
POINT_AXES = ("d", "t", "b", "regime")
#: ``dim``: the embedding dimension as a function of ``n`` (the paper's two panels).
DIMS = {"full": lambda n: n, "half": lambda n: math.ceil(n / 2)}
SWEEP_SETTINGS = ("N", "dim", "t_min", "t_max", "t_count", "steps", "lr")
#: The losses a ``sigmoid_free`` cell may optimize.
LOSSES = ("sigmoid", "infonce")
FREE_DEFAULTS: dict[str, Any] = {"dim": "full", "t_min": 0.1, "t_max": 5.0, "t_count": 50,
                                 "steps": 50_000, "lr": 0.5, "loss": "sigmoid"}
ENCODER_DEFAULTS: dict[str, Any] = {**FREE_DEFAULTS, "steps": 5_000, "lr": 0.01, "hidden": 128}
del ENCODER_DEFAULTS["loss"]


def t_values(t_min: float, t_max: float, count: int) -> list[float]:
    """``count`` evenly spaced temperatures from ``t_min`` to ``t_max`` (one if ``count`` is 1),
    rounded to 10 decimals so that they read as written (``0.3``, not ``0.30000000000000004``)."""
    from contrastkit.checks.scalars import check_count, check_positive

    t_min, t_max = check_positive("t_min", t_min), check_positive("t_max", t_max)
    count = check_count("t_count", count, minimum=1)
    if t_max < t_min:
        raise ValueError(f"t_max must be >= t_min = {t_min}, got {t_max}")
    if count == 1:
        return [round(t_min, 10)]
    return [round(t_min + (t_max - t_min) * k / (count - 1), 10) for k in range(count)]


def sweep_points(n: int, d: int, ts: list[float], u, v, loss: str = "sigmoid") -> list[dict]:
    """The points of a sweep: for each ``t = b``, its axes and the measured and theoretical
    ``s`` and loss of the final embeddings ``u``, ``v`` (shape ``(len(ts), n, d)``) under
    ``loss`` (``sigmoid``: Theorem 2's optimum; ``infonce``: the CCEM's minimum of InfoNCE,
    Corollary 3), and their distance from the simplex ETF."""
    import torch

    from contrastkit import theory
    from contrastkit.simulate.sigmoid import (
        etf_deviation,
        infonce_loss_batch,
        normalized_positive,
        sigmoid_loss_batch,
    )

    both = torch.tensor(ts, dtype=u.dtype)
    measured = normalized_positive(u, v).tolist()
    deviations = etf_deviation(u, v).tolist()
    infonce = loss == "infonce"
    losses = (infonce_loss_batch(u, v, both) if infonce
              else sigmoid_loss_batch(u, v, both, both)).tolist()
    points = []
    for t, s, value, deviation in zip(ts, measured, losses, deviations, strict=True):
        optimum = theory.sigmoid_optimum(n, t, t)
        s_theory, loss_theory = optimum.normalized_positive, optimum.loss
        if infonce:
            c, loss_theory = theory.infonce_ccem_minimum(n, t)
            s_theory = (1.0 + c) / 2.0
        points.append({"axes": {"d": d, "t": t, "b": t, "regime": optimum.regime},
                       "metrics": {"s_measured": s, "s_theory": s_theory,
                                   "loss_measured": value, "loss_theory": loss_theory,
                                   "etf_deviation": deviation}})
    return points


def _sweep_cell(optimize: Callable, defaults: dict, extra: tuple[str, ...]):
    """A kind's ``run``: the cell's sweep optimized by ``optimize(n, d, ts, steps=, lr=,
    seed=, **extra settings)``."""
    def run(cell: Cell, folder=None, steps: int | None = None) -> list[dict]:
        from contrastkit.checks.scalars import check_count

        settings = {**defaults, **cell.settings}
        if "N" not in settings:
            raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: a sigmoid sweep needs N "
                             f"in base, set or grid")
        for name, choices in (("dim", DIMS), ("loss", LOSSES)):
            if name in settings and settings[name] not in choices:
                raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {name} must be one "
                                 f"of {', '.join(choices)}, got {settings[name]!r}")
        try:
            ts = t_values(settings["t_min"], settings["t_max"], settings["t_count"])
            n = check_count("N", settings["N"], minimum=2)
            d = DIMS[settings["dim"]](n)
            u, v = optimize(n, d, ts, steps=settings["steps"] if steps is None else steps,
                            lr=settings["lr"], seed=cell.seed,
                            **{key: settings[key] for key in extra})
        except ValueError as error:
            raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {error}") from None
        return sweep_points(n, d, ts, u, v, settings.get("loss", "sigmoid"))

    return run


def _free(*args, loss: str = "sigmoid", **kwargs):
    from contrastkit.simulate.sigmoid import free_infonce_runs, free_sigmoid_runs

    return (free_infonce_runs if loss == "infonce" else free_sigmoid_runs)(*args, **kwargs)


def _encoder(*args, **kwargs):
    from contrastkit.simulate.sigmoid import encoder_sigmoid_runs

    return encoder_sigmoid_runs(*args, **kwargs)


CELL_KINDS.register("sigmoid_free", CellKind(
    run=_sweep_cell(_free, FREE_DEFAULTS, ("loss",)),
    settings=lambda: (*SWEEP_SETTINGS, "loss"),
    metrics=METRICS, data="free unit embeddings (simulation)",
    default_steps=lambda: FREE_DEFAULTS["steps"], point_axes=POINT_AXES))
CELL_KINDS.register("sigmoid_encoder", CellKind(
    run=_sweep_cell(_encoder, ENCODER_DEFAULTS, ("hidden",)),
    settings=lambda: (*SWEEP_SETTINGS, "hidden"), metrics=METRICS,
    data="Gaussian inputs through a two-layer ReLU encoder (simulation)",
    default_steps=lambda: ENCODER_DEFAULTS["steps"], point_axes=POINT_AXES))
