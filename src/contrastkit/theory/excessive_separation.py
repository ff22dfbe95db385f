"""Excessive separation of negative pairs in full-batch CL (central paper, Thm 5.3, Ex. 5.4).

For an independently additive loss (Def. 3.2) with cross-view negatives only, ``(c1, c2) =
(1, 0)``, the full-batch optimum is the simplex ETF of Theorem 5.1 when
``phi'(1) > (n-2)/(2(n-1)) psi'(-1/(n-1))`` (case iii), and is *excessively separated* (positive
similarity < 1, mean negative similarity < -1/(n-1)) when condition (8) holds:
``phi'(1) < (n-2)/(2(n-1)) psi'(-1/(n-1))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from contrastkit.checks.scalars import check_count, check_positive, check_real

from .sigmoid import _is_etf

# central differences with Richardson extrapolation: error O(h^4)
_STEP = 1e-3


def excessive_separation(
    phi: Callable[[float], float], psi: Callable[[float], float], n: int
) -> bool:
    r"""Whether condition (8) of Theorem 5.3 holds for a Def. 3.2 loss with ``(c1, c2) = (1, 0)``:

    .. math::
        \phi'(1) < \frac{n-2}{2(n-1)}\,\psi'\Big(-\frac{1}{n-1}\Big).

    ``phi`` (concave, increasing) and ``psi`` (convex, increasing) are the functions of Def. 3.2
    as plain Python/numpy callables on floats, with ``psi`` carrying any factor the loss puts in
    front (the sigmoid loss has ``psi(x) = (n-1) log(1 + exp(t x - b))``, Example 5.4). Their
    derivatives are taken numerically (a fourth-order central difference), so a case within
    ~1e-9 of equality is not resolved; for the sigmoid loss use the exact
    :func:`sigmoid_excessive_separation`. ``n`` is the number of pairs in the (full) batch.

    Example:
        >>> import numpy as np
        >>> t, b, n = 1.0, 0.0, 100
        >>> phi = lambda x: -np.logaddexp(0, -t * x + b)
        >>> psi = lambda x: (n - 1) * np.logaddexp(0, t * x - b)
        >>> excessive_separation(phi, psi, n)
        True
    """
    n = check_count("n", n, minimum=2)
    slope_positive = _derivative(phi, 1.0)
    slope_negative = _derivative(psi, -1.0 / (n - 1))
    return slope_positive < (n - 2) / (2 * (n - 1)) * slope_negative


def sigmoid_excessive_separation(n: int, t: float, b: float) -> bool:
    r"""Condition (10) of Example 5.4 for the sigmoid loss (the papers' ``t``, ``b``):

    .. math::
        \frac{1 + \exp\big(\frac{t}{n-1} + b\big)}{1 + \exp(t - b)} < \frac{n-2}{2},

    evaluated in log space (exact for any ``t``, ``b``). It is (8) with the sigmoid's ``phi`` and
    ``psi``, and the sigmoid optimum's ETF test negated: the same function decides both, so it
    holds exactly when :func:`~contrastkit.theory.sigmoid_optimum` is not the simplex ETF. In
    the library's SigLIP convention (logit ``scale * cos + bias``): ``t = scale``,
    ``b = -bias``.

    Example:
        >>> sigmoid_excessive_separation(1000, 10.0, 10.0)   # SigLIP's init at n = 1000
        False
    """
    n = check_count("n", n, minimum=2)
    t = check_positive("t", t)
    b = check_real("b", b)
    return not _is_etf(n, t, b)


def _derivative(fn: Callable[[float], float], x: float) -> float:
    def central(h: float) -> float:
        return (float(fn(x + h)) - float(fn(x - h))) / (2 * h)

    value = (4 * central(_STEP / 2) - central(_STEP)) / 3
    if not math.isfinite(value):
        raise ValueError(f"the derivative of the given function at {x} is not finite")
    return value
