"""Constructions of the optimal embeddings the papers describe."""

from __future__ import annotations

import numpy as np

from ._checks import check_count


def simplex_etf(n: int, d: int) -> np.ndarray:
    """``n`` unit vectors in ``R^d`` with all pairwise inner products ``-1/(n-1)``.

    The simplex equiangular tight frame: the full-batch optimum of Theorem 5.1 (with ``u_i =
    v_i``). It exists when ``d >= n - 1``; the rows sum to zero.

    Returns:
        float64 array of shape ``(n, d)``.

    Raises:
        ValueError: if ``n < 2`` or ``d < n - 1``.
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    if d < n - 1:
        raise ValueError(
            f"d must be >= n - 1 = {n - 1} for a simplex ETF of n = {n} points, got {d}"
        )
    centered = np.eye(n) - 1.0 / n
    # rows of `centered` span the (n-1)-dim subspace orthogonal to the all-ones vector;
    # express them in an orthonormal basis of it to get n-1 coordinates each.
    left, singular, _ = np.linalg.svd(centered)
    coords = left[:, : n - 1] * singular[: n - 1]
    coords /= np.linalg.norm(coords, axis=1, keepdims=True)
    out = np.zeros((n, d))
    out[:, : n - 1] = coords
    return out
