"""Slow loop references written straight from the paper's formulas (float64, no vectorization).

Each function takes already L2-normalized float64 views ``u, v`` of shape ``(B, d)`` and loops
over pairs with plain Python floats. Equation numbers refer to
``papers/similarities-of-embeddings-in-cl.md``.
"""

from __future__ import annotations

import math

import torch


def _dot(a: torch.Tensor, b: torch.Tensor) -> float:
    return sum(float(x) * float(y) for x, y in zip(a, b, strict=True))


def info_nce(u, v, t):
    """Eq. (13), first line: two cross-entropies over the rows and columns of u v^T / t."""
    n = len(u)
    total = 0.0
    for i in range(n):
        pos = math.exp(_dot(u[i], v[i]) / t)
        total -= math.log(pos / sum(math.exp(_dot(u[i], v[j]) / t) for j in range(n)))
        total -= math.log(pos / sum(math.exp(_dot(u[j], v[i]) / t) for j in range(n)))
    return total / (2 * n)


def simclr(u, v, t):
    """Appendix A.1 (2), first form."""
    n = len(u)
    total = 0.0
    for i in range(n):
        pos = math.exp(_dot(u[i], v[i]) / t)
        den_u = sum(math.exp(_dot(u[i], v[j]) / t) for j in range(n)) + sum(
            math.exp(_dot(u[i], u[j]) / t) for j in range(n) if j != i
        )
        den_v = sum(math.exp(_dot(u[j], v[i]) / t) for j in range(n)) + sum(
            math.exp(_dot(v[j], v[i]) / t) for j in range(n) if j != i
        )
        total -= math.log(pos / den_u) + math.log(pos / den_v)
    return total / (2 * n)


def dcl(u, v, t):
    """Appendix A.1 (3), rewritten (second) form."""
    n = len(u)
    total = 0.0
    for i in range(n):
        total += math.log(
            sum(
                math.exp(_dot(v[j] - v[i], u[i]) / t) + math.exp(_dot(u[j] - v[i], u[i]) / t)
                for j in range(n)
                if j != i
            )
        )
        total += math.log(
            sum(
                math.exp(_dot(u[j] - u[i], v[i]) / t) + math.exp(_dot(v[j] - u[i], v[i]) / t)
                for j in range(n)
                if j != i
            )
        )
    return total / (2 * n)


def dhel(u, v, t):
    """Appendix A.1 (4), rewritten (second) form."""
    n = len(u)
    total = 0.0
    for i in range(n):
        total += math.log(
            sum(math.exp(_dot(u[j] - v[i], u[i]) / t) for j in range(n) if j != i)
        )
        total += math.log(
            sum(math.exp(_dot(v[j] - u[i], v[i]) / t) for j in range(n) if j != i)
        )
    return total / (2 * n)


def sigmoid(u, v, t, b):
    """Eq. (9) in the papers' (t, b) convention."""
    n = len(u)
    total = 0.0
    for i in range(n):
        total += math.log1p(math.exp(-t * _dot(u[i], v[i]) + b))
        for j in range(n):
            if j != i:
                total += math.log1p(math.exp(t * _dot(u[i], v[j]) - b))
    return total / n


def spectral(u, v):
    """Appendix A.2 (2) with the positive term u_i . v_i."""
    n = len(u)
    pos = sum(_dot(u[i], v[i]) for i in range(n)) / n
    neg = sum(_dot(u[i], v[j]) ** 2 for i in range(n) for j in range(n) if j != i)
    return -pos + neg / (n * (n - 1))


def vrns(u, v, n_dataset, within_view=False):
    """Def. 5.7; with ``within_view`` the mean also runs over (u_i, u_j) and (v_i, v_j)."""
    m = len(u)
    offset = 1.0 / (n_dataset - 1)
    pairs = [(u[i], v[j]) for i in range(m) for j in range(m) if i != j]
    if within_view:
        pairs += [(u[i], u[j]) for i in range(m) for j in range(m) if i != j]
        pairs += [(v[i], v[j]) for i in range(m) for j in range(m) if i != j]
    return sum((_dot(a, b) + offset) ** 2 for a, b in pairs) / len(pairs)


def info_sym(u, v, phi, psi, c1, c2):
    """Def. 3.1, eq. (2), with scalar callables phi and psi."""

    def info(a, b):
        n = len(a)
        total = 0.0
        for i in range(n):
            inner = 0.0
            for j in range(n):
                if j != i:
                    inner += c1 * phi(_dot(b[j] - b[i], a[i])) + c2 * phi(_dot(a[j] - b[i], a[i]))
            total += psi(inner)
        return total / n

    return 0.5 * info(u, v) + 0.5 * info(v, u)


def ind_add(u, v, phi, psi, c1, c2, n):
    """Def. 3.2, eq. (3), with scalar callables phi and psi and dataset size n."""
    m = len(u)
    total = -sum(phi(_dot(u[i], v[i])) for i in range(m)) / n
    for i in range(m):
        for j in range(m):
            if i != j:
                total += c1 * psi(_dot(u[i], v[j])) / (n * (n - 1))
                total += c2 * (psi(_dot(u[i], u[j])) + psi(_dot(v[i], v[j]))) / (2 * n * (n - 1))
    return total
