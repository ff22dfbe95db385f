"""Comparing embeddings computed on two devices, or by two code paths that round differently."""

import numpy as np


def assert_rows_close(actual, expected, rtol: float = 1e-5) -> None:
    """Each row of ``actual`` within ``rtol`` of ``expected``'s row, relative to that row's norm.

    What float32 computed another way can promise: a sum of a few hundred products (a
    convolution, a linear layer; on a GPU in another order) differs by a few ulps of its largest
    terms, so an entry that is a small difference of large terms carries that absolute error and
    an elementwise relative tolerance fails on it. TF32 (a 10-bit mantissa) would be off by about
    1e-3 of the norm, far beyond 1e-5.
    """
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    error = np.linalg.norm(actual - expected, axis=1)
    bound = rtol * np.linalg.norm(expected, axis=1)
    worst = int(np.argmax(error - bound))
    assert (error <= bound).all(), (f"row {worst}: error {error[worst]:.3g} > {rtol} x its norm "
                                    f"{bound[worst] / rtol:.3g}")
