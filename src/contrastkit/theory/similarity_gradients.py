r"""The gradient of an InfoNCE-family loss with respect to the similarities (central paper,
Theorem 5.6 and its proof, Theorem C.18).

Def. 3.1 with ``phi(x) = exp(x / t)`` makes each anchor's term a log-sum-exp of its
similarities over ``t``, so the loss's partial derivative with respect to one cross-view
similarity ``s_ij = u_i . v_j`` (every other similarity held fixed) is a sum of two softmax
weights: ``s_ij`` enters the term of anchor ``u_i`` (row ``i``) and the term of anchor ``v_j``
(column ``j``). For a batch of ``m`` pairs and ``i != j``,

.. math::
    \frac{\partial L}{\partial s_{ij}} = \frac{1}{2mt}\Big(\frac{e^{s_{ij}/t}}{D_i}
        + \frac{e^{s_{ij}/t}}{D'_j}\Big) > 0,

with ``D_i`` the normalizer of anchor ``u_i`` and ``D'_j`` that of anchor ``v_j``. Theorem 5.6
is the InfoNCE case (``D_i = sum_k e^{u_i.v_k / t}``); its proof (Lemma C.17) compares the
nested batches ``[m1]`` and ``[m2]``, ``m1 <= m2``: every normalizer only gains terms, so
``m * dL/ds_ij`` does not grow with ``m`` and ``dL/ds_ij`` shrinks at least like ``m1 / m2``.
The same argument holds for SimCLR and DCL, whose normalizers also only grow with the batch
(their within-view terms), which this function covers as well (beyond the theorem, which
states InfoNCE only).

Lee, Lim, Lee, Sohn, "On the Similarities of Embeddings in Contrastive Learning", ICML 2025,
arXiv:2506.09781.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from contrastkit.checks.scalars import check_choice, check_positive

#: The losses of Def. 3.1 with ``phi(x) = exp(x / t)`` whose gradient is given here, and for
#: each whether its normalizers hold the within-view similarities and the positive.
SIMILARITY_GRADIENT_LOSSES = {
    "info_nce": {"within_view": False, "include_positive": True},
    "simclr": {"within_view": True, "include_positive": True},
    "dcl": {"within_view": True, "include_positive": False},
}


def similarity_gradient(u: ArrayLike, v: ArrayLike, temperature: float, loss: str = "info_nce"
                        ) -> np.ndarray:
    r"""The closed-form gradient of the symmetric loss ``loss`` of the batch ``(u, v)`` with
    respect to the cross-view similarities: ``G[i, j] = dL / d(u_i . v_j)``, every other
    similarity (cross-view and within-view) held fixed.

    The loss is Def. 3.1 in its symmetric form (``1/2`` for each view, ``1/m`` over the
    anchors) with ``phi(x) = exp(x / t)``: ``"info_nce"`` (``psi = log(1 + x)``,
    ``(c1, c2) = (1, 0)``: Theorem 5.6's loss), ``"simclr"`` (``log(1 + x)``, ``(1, 1)``) or
    ``"dcl"`` (``log x``, ``(1, 1)``), as :func:`contrastkit.losses.info_nce`,
    :func:`~contrastkit.losses.simclr` and :func:`~contrastkit.losses.dcl` compute them.
    Off the diagonal (the negative pairs)

    .. math::
        G_{ij} = \frac{1}{2mt}\Big(\frac{e^{s_{ij}/t}}{D_i} + \frac{e^{s_{ij}/t}}{D'_j}\Big),

    where ``D_i`` sums ``e^{x/t}`` over what anchor ``u_i`` is normalized against (the
    ``u_i . v_k``; with SimCLR and DCL also the ``u_i . u_k``, ``k != i``; DCL leaves out the
    positive ``u_i . v_i``) and ``D'_j`` likewise for anchor ``v_j`` (the ``u_k . v_j``, the
    ``v_j . v_k``). This is the proof of Theorem 5.6 (Theorem C.18) with the second term's
    normalizer read as anchor ``v_j``'s (the proof's display writes ``v_i`` there). On the
    diagonal, the positive pair's derivative: ``(1/(2mt)) (e^{s_ii/t}/D_i - 1 +
    e^{s_ii/t}/D'_i - 1)``, or ``-1/(mt)`` for DCL.

    The rows of ``u`` and ``v`` are used as given (the similarities are ``u v^T``); pass unit
    rows for cosine similarities. Computed in float64 in log space, so it is exact for any
    temperature.

    Args:
        u, v: array-likes of shape ``(m, d)``, ``m >= 2``; row ``i`` of each is pair ``i``.
        temperature: ``t > 0``.
        loss: one of ``info_nce``, ``simclr``, ``dcl``.

    Returns:
        the ``(m, m)`` float64 array ``G``.

    Example:
        >>> import numpy as np
        >>> u = v = np.eye(2)      # two orthogonal pairs, each positive aligned
        >>> g = similarity_gradient(u, v, 1.0)
        >>> round(float(g[0, 1]), 6), round(1 / (2 * (np.e + 1)), 6)   # 1/(2mt) * 2/(e + 1)
        (0.134471, 0.134471)
    """
    loss = check_choice("loss", loss, tuple(SIMILARITY_GRADIENT_LOSSES))
    t = check_positive("temperature", temperature)
    u, v = _views(u, v)
    m = u.shape[0]
    own = SIMILARITY_GRADIENT_LOSSES[loss]
    cross = u @ v.T / t
    excluded = np.full((m, m), False) if own["include_positive"] else np.eye(m, dtype=bool)
    candidates = np.where(excluded, -np.inf, cross)
    row = logsumexp(candidates, axis=1)  # log D_i
    column = logsumexp(candidates, axis=0)  # log D'_j
    if own["within_view"]:
        off = ~np.eye(m, dtype=bool)
        row = np.logaddexp(row, logsumexp(np.where(off, u @ u.T / t, -np.inf), axis=1))
        column = np.logaddexp(column, logsumexp(np.where(off, v @ v.T / t, -np.inf), axis=1))
    weights = np.exp(cross - row[:, None]) + np.exp(cross - column[None, :])
    gradient = weights / (2 * m * t)
    diagonal = (np.full(m, -1.0 / (m * t)) if not own["include_positive"]
                else (np.diag(weights) - 2.0) / (2 * m * t))
    np.fill_diagonal(gradient, diagonal)
    return gradient


def _views(u: ArrayLike, v: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``u`` and ``v`` as float64 arrays of one shape ``(m, d)``, ``m >= 2``."""
    arrays = []
    for name, value in (("u", u), ("v", v)):
        if hasattr(value, "detach"):  # a torch tensor
            value = value.detach().cpu().double().numpy()
        array = np.asarray(value, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] < 2 or not np.isfinite(array).all():
            raise ValueError(f"{name} must be a finite array of shape (m, d) with m >= 2, got "
                             f"shape {array.shape}" + ("" if np.isfinite(array).all()
                                                       else " with non-finite values"))
        arrays.append(array)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"u and v must have the same shape, got {arrays[0].shape} and "
                         f"{arrays[1].shape}")
    return arrays[0], arrays[1]
