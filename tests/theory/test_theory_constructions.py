"""Constructions have exactly the advertised inner products (central paper Thm 5.1/5.5,
sigmoid paper Def. 1-3 and Proposition 1)."""

import itertools
import math

import numpy as np
import pytest

from contrastkit import theory


def _negative_pairs(u, v):
    """Cross-view negative similarities u_i . v_j, i != j, by an explicit loop (reference)."""
    n = len(u)
    return np.array([u[i] @ v[j] for i, j in itertools.product(range(n), range(n)) if i != j])


@pytest.mark.parametrize("n, d", [(2, 1), (3, 2), (5, 4), (7, 10)])
def test_simplex_etf_inner_products(n, d):
    w = theory.simplex_etf(n, d)
    assert w.shape == (n, d)
    gram = w @ w.T
    expected = np.full((n, n), -1 / (n - 1))
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(gram, expected, atol=1e-12)


CONSTRUCTIONS = {
    "simplex_etf": lambda: theory.simplex_etf(6, 8),
    "ccem": lambda: theory.ccem(5, 7, 0.8),
    "minibatch_optimum min": lambda: theory.minibatch_optimum(6, 3, 6, "min"),
    "minibatch_optimum max": lambda: theory.minibatch_optimum(6, 3, 4, "max"),
}


def _flip_signs(decomposition, vector_outputs):
    """Wrap an SVD/eigh so every singular/eigen vector comes back negated, as another LAPACK
    build may return it (vectors are defined only up to sign)."""

    def flipped(*args, **kwargs):
        result = decomposition(*args, **kwargs)
        if not isinstance(result, tuple):  # compute_uv=False: values only
            return result
        return tuple(-part if index in vector_outputs else part
                     for index, part in enumerate(result))

    return flipped


@pytest.mark.parametrize("name", sorted(CONSTRUCTIONS))
def test_constructions_do_not_depend_on_decomposition_signs(name, monkeypatch):
    """Same output, bit for bit, when every SVD/eigh in numpy or torch returns its vectors
    negated: the constructions are canonical, not whatever the platform's LAPACK picks."""
    import torch

    build = CONSTRUCTIONS[name]
    expected = build()
    for module, attribute, vectors in [
        (np.linalg, "svd", (0, 2)), (np.linalg, "eigh", (1,)),
        (torch.linalg, "svd", (0, 2)), (torch.linalg, "eigh", (1,)),
    ]:
        monkeypatch.setattr(module, attribute, _flip_signs(getattr(module, attribute), vectors))
    for got, want in zip(_arrays(build()), _arrays(expected), strict=True):
        np.testing.assert_array_equal(got, want)


def _arrays(output):
    return output if isinstance(output, tuple) else (output,)


def test_antipodal_every_cross_view_inner_product_is_minus_one():
    u, v = theory.antipodal(5, 3)
    np.testing.assert_allclose(u @ v.T, -np.ones((5, 5)), atol=0)
    np.testing.assert_allclose(u @ u.T, np.ones((5, 5)), atol=0)


@pytest.mark.parametrize("delta", [0.0, 0.3, 1.0, 4.0])
@pytest.mark.parametrize("n, d", [(3, 3), (6, 6), (5, 9)])
def test_ccem_proposition_1(n, d, delta):
    u, v = theory.ccem(n, d, delta)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-12)
    cross = u @ v.T
    positive = (1 - delta**2) / (1 + delta**2)
    negative = -(1 / (n - 1) + delta**2) / (1 + delta**2)
    within = (-1 / (n - 1) + delta**2) / (1 + delta**2)  # spec §1.9 (derived)
    np.testing.assert_allclose(np.diag(cross), positive, atol=1e-12)
    np.testing.assert_allclose(_negative_pairs(u, v), negative, atol=1e-12)
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose((u @ u.T)[off], within, atol=1e-12)
    np.testing.assert_allclose((v @ v.T)[off], within, atol=1e-12)


def test_ccem_ends_are_etf_and_antipodal():
    u, v = theory.ccem(4, 4, 0.0)
    np.testing.assert_allclose(u, v)
    np.testing.assert_allclose(u @ u.T, theory.simplex_etf(4, 4) @ theory.simplex_etf(4, 4).T,
                               atol=1e-12)
    u, v = theory.ccem(4, 4, math.inf)
    np.testing.assert_allclose(u @ v.T, -1.0, atol=0)


@pytest.mark.parametrize("n, m", [(4, 2), (6, 3), (8, 4), (9, 3)])
@pytest.mark.parametrize("extreme", ["min", "max"])
def test_minibatch_optimum_attains_theorem_5_5_bounds(n, m, extreme):
    d = (n // m) * (m - 1) + 1
    u, v = theory.minibatch_optimum(n, m, d, extreme=extreme)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", u, v), 1.0, atol=1e-12)  # s_pos = 1
    for k in range(n // m):  # each fixed batch is an (m-1)-simplex ETF
        block = u[k * m : (k + 1) * m] @ v[k * m : (k + 1) * m].T
        np.testing.assert_allclose(block[~np.eye(m, dtype=bool)], -1 / (m - 1), atol=1e-12)
    negatives = _negative_pairs(u, v)
    assert negatives.mean() == pytest.approx(-1 / (n - 1), abs=1e-12)
    bounds = theory.minibatch_variance_bounds(n, m)
    expected = bounds.low if extreme == "min" else bounds.high
    assert negatives.var() == pytest.approx(expected, abs=1e-12)


def test_figure_2_variances():
    # Fig. 2 (n = 4, m = 2, d = 3): (a) max variance 8/9, (b) min variance 2/9
    assert _negative_pairs(*theory.minibatch_optimum(4, 2, 3, "max")).var() == pytest.approx(8 / 9)
    assert _negative_pairs(*theory.minibatch_optimum(4, 2, 3, "min")).var() == pytest.approx(2 / 9)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: theory.simplex_etf(1, 3), "n"),
        (lambda: theory.simplex_etf(5, 3), "d"),
        (lambda: theory.antipodal(1, 3), "n"),
        (lambda: theory.antipodal(3, 0), "d"),
        (lambda: theory.ccem(4, 3, 0.5), "d"),
        (lambda: theory.ccem(4, 4, -0.1), "delta"),
        (lambda: theory.ccem(4, 4, float("nan")), "delta"),
        (lambda: theory.minibatch_optimum(6, 4, 10), "m"),
        (lambda: theory.minibatch_optimum(6, 3, 3, "min"), "d"),
        (lambda: theory.minibatch_optimum(6, 3, 1, "max"), "d"),
        (lambda: theory.minibatch_optimum(6, 3, 4, "median"), "extreme"),
        (lambda: theory.minibatch_optimum(6, 1, 4), "m"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


def test_theory_does_not_import_torch():
    import os
    import subprocess
    import sys
    from pathlib import Path

    import contrastkit

    src = Path(contrastkit.__file__).resolve().parents[1]  # the tested checkout's src/
    code = "import sys, contrastkit.theory; sys.exit('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(src)}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0
