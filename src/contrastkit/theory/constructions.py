"""Constructions of the optimal embeddings the papers describe.

Each function returns float64 numpy arrays whose rows are unit vectors; two-view constructions
return the pair ``(u, v)`` of shape ``(n, d)`` each, row ``i`` of both being positive pair ``i``.
"""

from __future__ import annotations

import math

import numpy as np

from contrastkit.checks.scalars import check_count, check_real


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
    out = np.zeros((n, d))
    out[:, : n - 1] = _helmert_coordinates(n)
    return out


def _helmert_coordinates(n: int) -> np.ndarray:
    """The centered unit vectors ``e_i - 1/n`` (rescaled to unit norm) in the Helmert basis.

    Column ``k`` is the coordinate along ``h_k = (1, ..., 1, -k, 0, ..., 0) / sqrt(k (k+1))``
    (``k`` ones; ``k = 1..n-1``), an orthonormal basis of the sum-zero subspace. Every entry is a
    closed form, computed elementwise: no SVD or eigensolver whose signs, ordering or last digits
    depend on the LAPACK build, so the output is the same on every machine.
    """
    k = np.arange(1, n, dtype=np.float64)
    # sqrt(n / (n-1)) rescales the rows from norm sqrt((n-1)/n) to 1
    entry = np.sqrt(n / ((n - 1) * k * (k + 1)))
    rows = np.arange(n)[:, None]
    columns = np.arange(1, n)[None, :]
    coords = np.where(rows < columns, entry, 0.0)
    coords[np.arange(1, n), np.arange(n - 1)] = -k * entry
    return coords


def antipodal(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The antipodal structure (sigmoid paper, Definition 2): ``u_i = e_1``, ``v_i = -e_1``.

    Every inner product ``u_i . v_j`` (positive or negative pair) is ``-1``; all ``u_i`` coincide,
    as do all ``v_i``. It is the sigmoid loss optimum for small ``t + b`` and the ``delta -> inf``
    end of :func:`ccem`.

    Example:
        >>> u, v = antipodal(4, 3)
        >>> float((u @ v.T).max())
        -1.0
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    u = np.zeros((n, d))
    u[:, 0] = 1.0
    return u, -u


def ccem(n: int, d: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The double-constant embedding model (sigmoid paper, Definition 3, Eq. 16).

    With ``w_i`` a simplex ETF in the first ``n - 1`` coordinates and a last shared coordinate,

    .. math::
        u_i = \frac{(w_i, \delta)}{\sqrt{1+\delta^2}},\qquad
        v_i = \frac{(w_i, -\delta)}{\sqrt{1+\delta^2}},

    so (Proposition 1) ``u_i . v_i = (1 - delta^2) / (1 + delta^2)`` and, for ``i != j``,
    ``u_i . v_j = -(1/(n-1) + delta^2) / (1 + delta^2)``. ``delta = 0`` is the simplex ETF with
    ``u = v``; ``delta = math.inf`` is the antipodal limit. Needs ``d >= n``.

    Example:
        >>> u, v = ccem(4, 4, 0.5)   # (1 - 0.25) / 1.25 and -(1/3 + 0.25) / 1.25
        >>> round(float(u[0] @ v[0]), 12), round(float(u[0] @ v[1]), 12)
        (0.6, -0.466666666667)
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    if d < n:
        raise ValueError(f"d must be >= n = {n} for the CCEM of n = {n} pairs, got {d}")
    if isinstance(delta, bool) or not (delta == math.inf or check_real("delta", delta) >= 0):
        raise ValueError(f"delta must be a number >= 0 or math.inf, got {delta!r}")
    if delta == math.inf:
        scale, shift = 0.0, 1.0
    else:
        scale, shift = 1.0 / math.sqrt(1.0 + delta**2), delta / math.sqrt(1.0 + delta**2)
    u = scale * simplex_etf(n, d)
    u[:, n - 1] = shift  # the ETF occupies the first n - 1 coordinates
    v = u.copy()
    v[:, n - 1] = -shift
    return u, v


def minibatch_optimum(
    n: int, m: int, d: int, extreme: str = "min"
) -> tuple[np.ndarray, np.ndarray]:
    """An optimum of the fixed mini-batch loss of Theorem 5.5 with extreme negative variance.

    The ``b = n / m`` fixed batches ``I_k = {m(k-1)+1, ..., mk}`` each form an ``(m-1)``-simplex
    ETF with ``u_i = v_i`` (every batch is at its Theorem 5.1 optimum). How the batches sit
    relative to each other sets the variance of the negative-pair similarities:

    - ``extreme="max"``: every batch is the same ETF, so ``u_i . v_j = 1`` when ``i`` and ``j``
      hold the same position in different batches (Fig. 2a). Attains the upper bound of
      :func:`~contrastkit.theory.minibatch_variance_bounds`; needs ``d >= m - 1``.
    - ``extreme="min"``: the batches' ETFs lie in mutually orthogonal subspaces, so cross-batch
      similarities are 0 (Fig. 2b). Attains the lower bound; needs ``d >= b (m - 1)``.

    Both have mean negative similarity ``-1/(n-1)`` and positive similarity 1.
    """
    n = check_count("n", n, minimum=2)
    m = check_count("m", m, minimum=2)
    d = check_count("d", d, minimum=1)
    if m > n or n % m:
        raise ValueError(f"m must divide n = {n} (equal fixed mini-batches), got m = {m}")
    if extreme not in ("min", "max"):
        raise ValueError(f"extreme must be 'min' or 'max', got {extreme!r}")
    batches = n // m
    needed = batches * (m - 1) if extreme == "min" else m - 1
    if d < needed:
        raise ValueError(
            f"d must be >= {needed} for the {extreme}-variance mini-batch optimum with "
            f"n = {n}, m = {m}, got {d}"
        )
    etf = simplex_etf(m, m - 1)
    u = np.zeros((n, d))
    for k in range(batches):
        offset = k * (m - 1) if extreme == "min" else 0
        u[k * m : (k + 1) * m, offset : offset + m - 1] = etf
    return u, u.copy()
