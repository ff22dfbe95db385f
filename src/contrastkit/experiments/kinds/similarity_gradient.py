"""The gradient of an InfoNCE-family loss with respect to a negative-pair similarity, over
nested batches of the same embeddings (Lee, Lim, Lee, Sohn, "On the Similarities of Embeddings
in Contrastive Learning", ICML 2025, arXiv:2506.09781: Theorem 5.6, proved as Theorem C.18
with Lemma C.17).

A cell draws ``n`` pairs of unit embeddings in ``R^d`` (its ``structure`` and seed), then, for
each batch size ``m`` of ``m_min, 2 m_min, 4 m_min, ...`` up to ``n`` (and ``n`` itself), takes
the batch of the first ``m`` pairs, ``[m]``, the theorem's nested batches, and measures the
gradient of the loss of that batch with respect to every cross-view similarity
``s_ij = u_i . v_j`` by autograd through the library's own loss (:func:`batch_gradient`), beside
the closed form (:func:`contrastkit.theory.similarity_gradient`). Each ``m`` is a point of the
results (axis ``m``).

``structure``:

- ``sphere``: every ``u_i`` and ``v_i`` drawn independently, uniformly on the sphere;
- ``clustered``: ``classes`` centres uniform on the sphere, pair ``i`` of class ``i mod
  classes``, ``u_i`` and ``v_i`` two independent noisy copies of its centre (``noise`` times a
  Gaussian of expected norm 1, then normalized): the positive pair and the same-class negatives
  are equally similar, the other negatives near 0, as augmented views of labelled data;
- ``etf``: ``u_i = v_i`` = the simplex ETF of ``n`` points (Theorem 5.1's full-batch optimum,
  every negative similarity ``-1/(n-1)``), randomly rotated; needs ``d >= n - 1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit.experiments.kinds import CELL_KINDS, CellKind

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

METRICS = ("grad", "grad_smaller", "grad_theory", "grad_rel_error", "grad_min",
           "ratio_to_smaller", "ratio_bound", "pos_sim_mean", "neg_sim_mean")
POINT_AXES = ("m",)
STRUCTURES = ("sphere", "clustered", "etf")
SETTINGS = ("loss", "structure", "n", "d", "temperature", "m_min", "classes", "noise")
DEFAULTS = {"loss": "info_nce", "structure": "sphere", "m_min": 2, "classes": 10, "noise": 0.5}


def batch_sizes(m_min: int, n: int) -> list[int]:
    """The nested batch sizes ``m_min, 2 m_min, 4 m_min, ...`` below ``n``, then ``n``
    (``m_min < n``)."""
    from contrastkit.checks.scalars import check_count

    n = check_count("n", n, minimum=2)
    m_min = check_count("m_min", m_min, minimum=2)
    if m_min >= n:
        raise ValueError(f"m_min must be < n = {n} (two batch sizes at least), got {m_min}")
    sizes = [m_min]
    while sizes[-1] * 2 < n:
        sizes.append(sizes[-1] * 2)
    return sizes if sizes[-1] == n else [*sizes, n]


def draw_pairs(structure: str, n: int, d: int, seed: int, classes: int = 10,
               noise: float = 0.5):
    """``n`` pairs of unit embeddings in ``R^d`` of ``structure`` (see the module's text), as
    float64 tensors ``(u, v)`` of shape ``(n, d)``, drawn from a generator seeded ``seed``."""
    import torch

    from contrastkit import theory
    from contrastkit.checks.scalars import check_choice, check_count, check_nonnegative
    from contrastkit.rows import unit_rows

    structure = check_choice("structure", structure, STRUCTURES)
    n, d = check_count("n", n, minimum=2), check_count("d", d, minimum=1)
    generator = torch.Generator().manual_seed(int(seed))

    def gaussian(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    if structure == "sphere":
        return unit_rows(gaussian(n, d)), unit_rows(gaussian(n, d))
    if structure == "clustered":
        classes = check_count("classes", classes, minimum=1)
        noise = check_nonnegative("noise", noise)
        centres = unit_rows(gaussian(classes, d))[torch.arange(n) % classes]
        return tuple(unit_rows(centres + noise * gaussian(n, d) / d**0.5) for _ in range(2))
    etf = torch.from_numpy(theory.simplex_etf(n, d))
    rotation, _ = torch.linalg.qr(gaussian(d, d))
    u = etf @ rotation.T
    return u, u.clone()


def batch_gradient(loss, u, v, temperature: float):
    """``G[i, j] = dL(u, v) / d(u_i . v_j)`` by autograd through ``loss`` (a library loss
    function, called as ``loss(u', v', temperature=, normalize=False)``), every other
    similarity held fixed.

    The similarities are made free variables by two extra blocks of coordinates: ``u' = [u,
    E]``, ``v' = [v, I]`` with ``E = 0`` the ``(m, m)`` variable, so ``u'_i . v'_j = u_i . v_j +
    E_ij`` while the within-view similarities ``u'_i . u'_k`` and ``v'_j . v'_k`` (``j != k``)
    keep their values and their derivative in ``E`` vanishes at 0. The gradient in ``E`` at 0
    is then the gradient in the similarities, computed by the loss's own (fused) code."""
    import torch

    m = u.shape[0]
    extra = torch.zeros(m, m, dtype=u.dtype, requires_grad=True)
    identity = torch.eye(m, dtype=v.dtype)
    value = loss(torch.cat([u, extra], dim=1), torch.cat([v, identity], dim=1),
                 temperature=temperature, normalize=False)
    (gradient,) = torch.autograd.grad(value, extra)
    return gradient


def gradient_points(loss_name: str, u, v, temperature: float, sizes: list[int]) -> list[dict]:
    """One point per two consecutive batch sizes ``m1 < m2`` of ``sizes`` (increasing), its
    axis ``m = m2``: the theorem applied to the nested batches ``[m1]`` and ``[m2]`` of
    ``u, v`` (see :data:`METRICS` and the recipe's notes)."""
    import torch

    from contrastkit import losses, theory

    loss = {"info_nce": losses.info_nce, "simclr": losses.simclr, "dcl": losses.dcl}[loss_name]
    measured, closed = [], []
    for m in sizes:
        measured.append(batch_gradient(loss, u[:m], v[:m], temperature))
        closed.append(torch.from_numpy(
            theory.similarity_gradient(u[:m], v[:m], temperature, loss_name)))
    negatives = [~torch.eye(m, dtype=torch.bool) for m in sizes]
    errors = [float(((g - c).abs() / c.abs())[off].max())
              for g, c, off in zip(measured, closed, negatives, strict=True)]
    points = []
    for k in range(1, len(sizes)):
        m1, m2 = sizes[k - 1], sizes[k]
        smaller, larger, pairs = measured[k - 1], measured[k], negatives[k - 1]
        similarities = u[:m2] @ v[:m2].T
        points.append({"axes": {"m": m2}, "metrics": {
            "grad": float(larger[0, 1]), "grad_smaller": float(smaller[0, 1]),
            "grad_theory": float(closed[k][0, 1]),
            "grad_rel_error": max(errors[k - 1], errors[k]),
            "grad_min": float(min(smaller[pairs].min(), larger[negatives[k]].min())),
            "ratio_to_smaller": float((larger[:m1, :m1][pairs] / smaller[pairs]).max()),
            "ratio_bound": m1 / m2,
            "pos_sim_mean": float(similarities.diagonal().mean()),
            "neg_sim_mean": float(similarities[negatives[k]].mean())}})
    return points


def gradient_cell(cell: Cell, folder=None, steps: int | None = None) -> list[dict]:
    """A cell's points (see the module's text). Nothing is optimized: ``steps=None`` computes
    every batch size; any ``steps`` (the dry run's 0, the smoke test's 1) builds and checks the
    whole cell (its settings, the ``n`` pairs) but computes only its first point, the two
    smallest batch sizes."""
    from contrastkit import theory

    settings = {**DEFAULTS, **cell.settings}
    try:
        missing = [name for name in ("n", "d", "temperature") if name not in settings]
        if missing:
            raise ValueError(f"a similarity_gradient cell needs {', '.join(missing)} in base, "
                             f"set or grid")
        if settings["loss"] not in theory.SIMILARITY_GRADIENT_LOSSES:
            raise ValueError(f"loss must be one of "
                             f"{', '.join(theory.SIMILARITY_GRADIENT_LOSSES)}, got "
                             f"{settings['loss']!r}")
        sizes = batch_sizes(settings["m_min"], settings["n"])
        u, v = draw_pairs(settings["structure"], settings["n"], settings["d"], cell.seed,
                          settings["classes"], settings["noise"])
        if steps is not None:
            sizes = sizes[:2]
        return gradient_points(settings["loss"], u, v, settings["temperature"], sizes)
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {error}") from None


CELL_KINDS.register("similarity_gradient", CellKind(
    run=gradient_cell, settings=lambda: SETTINGS, metrics=METRICS,
    data="unit embeddings drawn at random or built (no training; exact gradients)",
    point_axes=POINT_AXES))
