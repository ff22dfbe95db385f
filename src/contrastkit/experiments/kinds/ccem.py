"""The double-constant embedding model, measured against Proposition 1 (Lee, Chang & Sohn,
"Analysis of Using Sigmoid Loss for Contrastive Learning", AISTATS 2024, arXiv:2402.12613:
Definition 3, Proposition 1, Example 1 and Fig. 1).

A cell builds the CCEM of ``n`` pairs in ``R^d`` at ``delta`` (:func:`contrastkit.theory.ccem`;
``delta: .inf`` is the antipodal limit) and records its measured similarities and the angle
between ``u_i`` and ``v_i`` beside Proposition 1's closed forms. Nothing is optimized: the
cell is exact and the same for every seed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METRICS = ("pos_sim", "neg_sim", "angle_deg", "theory_pos_sim", "theory_neg_sim",
           "theory_angle_deg")


def proposition_1(n: int, delta: float) -> dict:
    """Proposition 1's ``u_i.v_i = (1 - delta^2) / (1 + delta^2)`` and, for ``i != j``,
    ``u_i.v_j = -(1/(n-1) + delta^2) / (1 + delta^2)`` (both ``-1`` at ``delta = inf``), and
    the angle between ``u_i`` and ``v_i``, ``2 arctan(delta)`` (Example 1: 0, 90 and 180
    degrees at ``delta = 0, 1, inf``)."""
    if delta == math.inf:
        positive = negative = -1.0
    else:
        positive = (1 - delta**2) / (1 + delta**2)
        negative = -(1 / (n - 1) + delta**2) / (1 + delta**2)
    return {"theory_pos_sim": positive, "theory_neg_sim": negative,
            "theory_angle_deg": math.degrees(2 * math.atan(delta))}


def measured(u, v) -> dict:
    """The mean positive similarity, mean cross-view negative similarity and mean angle (in
    degrees) between ``u_i`` and ``v_i`` of the embeddings ``u``, ``v`` (rows)."""
    import numpy as np

    similarities = u @ v.T
    positives = np.diag(similarities)
    n = len(u)
    negatives = similarities[~np.eye(n, dtype=bool)]
    # 2 atan2(|u - v|, |u + v|) is exact where arccos(u.v) loses half the digits (near 0, pi)
    angles = np.degrees(2 * np.arctan2(np.linalg.norm(u - v, axis=1),
                                       np.linalg.norm(u + v, axis=1)))
    return {"pos_sim": float(positives.mean()), "neg_sim": float(negatives.mean()),
            "angle_deg": float(angles.mean())}


def ccem_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """The CCEM at the cell's ``n``, ``d`` and ``delta``, measured, beside Proposition 1."""
    from contrastkit import theory

    settings = {"n": 3, "d": 3, **cell.settings}
    try:
        u, v = theory.ccem(settings["n"], settings["d"], settings["delta"])
    except (KeyError, ValueError) as error:
        what = error if isinstance(error, ValueError) else "a CCEM needs delta"
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {what}") from None
    return {**measured(u, v), **proposition_1(settings["n"], settings["delta"])}


CELL_KINDS.register("ccem", CellKind(
    run=ccem_cell, settings=lambda: ("n", "d", "delta"), metrics=METRICS,
    data="the CCEM construction (exact, no optimization)"))
