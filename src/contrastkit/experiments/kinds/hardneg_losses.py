"""A ``hardneg_losses`` cell of a recipe: the exact losses of one drawn representation with
reference and with hard negatives (R. Jiang, T. Nguyen, S. Aeron, P. Ishwar, "Hard-Negative
Sampling for Contrastive Learning", arXiv:2311.05139, Theorem 1: ``L_HSCL >= L_SCL`` and
``L_HUCL >= L_UCL`` for every representation ``f``).

The cell draws ``classes x n_per_class`` labelled points in the unit ball of ``R^dim`` with its
seed, in one of three ``structure`` s (``ball``: uniform in the ball; ``sphere``: uniform on
the sphere; ``clustered``: each class around a vertex of a simplex, its points spread by
Gaussian noise of std ``spread`` and pulled back into the ball), and computes both losses
exactly (:func:`contrastkit.theory.hard_negative_losses`; ``family: scl`` or ``ucl``, ``k``
negatives, exponential tilting ``beta``, ``psi``). Nothing is trained: the theorem holds for
every ``f``, so the cells draw representations far from any optimum as well as clustered ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METRICS = ("loss_reference", "loss_hard", "min_pair_gap")
STRUCTURES = ("ball", "sphere", "clustered")
FAMILIES = ("scl", "ucl")
DEFAULTS = {"classes": 3, "n_per_class": 8, "dim": 2, "structure": "ball", "spread": 0.3,
            "family": "scl", "k": 2, "beta": 1.0, "psi": "mean"}


def draw_representation(structure: str, classes: int, n_per_class: int, dim: int,
                        spread: float, seed: int):
    """``(z, labels)``: ``classes x n_per_class`` rows in the unit ball of ``R^dim`` (see the
    module's text), drawn with ``seed``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), n_per_class)
    directions = rng.normal(size=(len(labels), dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    if structure == "sphere":
        return directions, labels
    if structure == "ball":
        return directions * rng.random((len(labels), 1)) ** (1.0 / dim), labels
    vertices = np.eye(classes) - 1.0 / classes
    vertices = vertices @ np.linalg.qr(rng.normal(size=(classes, classes)))[0]
    if dim < classes:
        raise ValueError(f"structure clustered needs dim >= classes = {classes}, got {dim}")
    means = np.zeros((classes, dim))
    means[:, :classes] = vertices / np.linalg.norm(vertices, axis=1, keepdims=True)
    z = means[labels] + spread * rng.normal(size=(len(labels), dim))
    return z / np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True)), labels


def losses_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """Both exact losses of the cell's representation (``folder`` and ``steps`` unused:
    nothing is written or optimized)."""
    from contrastkit.theory import hard_negative_losses

    settings = {**DEFAULTS, **cell.settings}
    where = f"cell {cell.cell_id} of {cell.recipe}"
    for name, choices in (("structure", STRUCTURES), ("family", FAMILIES)):
        if settings[name] not in choices:
            raise ValueError(f"{where}: {name} must be one of {', '.join(choices)}, got "
                             f"{settings[name]!r}")
    try:
        z, labels = draw_representation(settings["structure"], settings["classes"],
                                        settings["n_per_class"], settings["dim"],
                                        settings["spread"], cell.seed)
        losses = hard_negative_losses(z, labels, settings["k"], settings["beta"],
                                      supervised=settings["family"] == "scl",
                                      psi=settings["psi"])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return {"loss_reference": losses["reference"], "loss_hard": losses["hard"],
            "min_pair_gap": losses["min_pair_gap"]}


CELL_KINDS.register("hardneg_losses", CellKind(
    run=losses_cell, settings=lambda: tuple(DEFAULTS), metrics=METRICS,
    data="labelled points drawn in the unit ball (exact losses, nothing trained)"))
