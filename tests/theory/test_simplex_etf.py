"""The simplex ETF construction has exactly the advertised inner products."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit import theory


@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (4, 3), (10, 9), (10, 32)])
def test_simplex_etf_gram_matrix(n, d):
    x = theory.simplex_etf(n, d)
    assert x.shape == (n, d)
    expected = np.full((n, n), -1.0 / (n - 1))
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(x @ x.T, expected, atol=1e-12)
    np.testing.assert_allclose(x.sum(axis=0), 0.0, atol=1e-12)


@pytest.mark.parametrize("n,d,name", [(1, 3, "n"), (5, 3, "d"), (4, 0, "d"), (2.0, 3, "n")])
def test_simplex_etf_rejects_bad_sizes(n, d, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        theory.simplex_etf(n, d)
