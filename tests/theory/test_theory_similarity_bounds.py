"""Theorem 5.2 (with its corrected identity), Theorem 5.5's interval and the LMCL Eq. 5 ceiling."""

import numpy as np
import pytest

from contrastkit import theory


def _random_unit(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_minibatch_variance_bounds_formula_and_limits():
    assert theory.minibatch_variance_bounds(4, 2) == pytest.approx((2 / 9, 8 / 9))  # Fig. 2
    assert theory.minibatch_variance_bounds(10, 10) == (0.0, 0.0)  # full batch: Theorem 5.1
    bounds = [theory.minibatch_variance_bounds(48, m) for m in (2, 3, 4, 6, 8, 12, 24)]
    lows, highs = [b.low for b in bounds], [b.high for b in bounds]
    assert all(np.diff(lows) < 0) and all(np.diff(highs) < 0)  # both decrease in m


@pytest.mark.parametrize("n, m", [(1, 2), (10, 1), (10, 11)])
def test_minibatch_variance_bounds_bad_input(n, m):
    with pytest.raises(ValueError, match=r"^(n|m)\b"):
        theory.minibatch_variance_bounds(n, m)


@pytest.mark.parametrize("seed", range(5))
def test_theorem_5_2_and_its_tight_form_hold_on_random_embeddings(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 12)), int(rng.integers(1, 8))
    u, v = _random_unit(rng, n, d), _random_unit(rng, n, d)
    ident = theory.alignment_identity(u, v)
    assert ident.positive_mean <= theory.positive_similarity_ceiling(ident.negative_mean, n)
    tight = theory.tight_positive_similarity_ceiling(ident.negative_mean, n)
    assert ident.positive_mean <= tight + 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_corrected_lemma_c4_identity_holds_and_the_printed_one_does_not(seed):
    rng = np.random.default_rng(seed)
    n, d = 7, 5
    u, v = _random_unit(rng, n, d), _random_unit(rng, n, d)
    ident = theory.alignment_identity(u, v)
    # reference: the identity written out with loops over the n positive pairs
    mean_u, mean_v = u.mean(0), v.mean(0)
    lhs = 1 - np.mean([u[i] @ v[i] for i in range(n)]) + 2 * mean_u @ mean_v
    diff = u - v
    rhs = 0.5 * np.mean([np.sum((diff[i] - diff.mean(0)) ** 2) for i in range(n)])
    rhs += 0.5 * np.sum((mean_u + mean_v) ** 2)
    assert ident.lhs == pytest.approx(lhs, abs=1e-12)
    assert ident.rhs == pytest.approx(rhs, abs=1e-12)
    assert ident.lhs == pytest.approx(ident.rhs, abs=1e-12)


def test_lemma_c4_as_printed_fails_on_collapsed_embeddings():
    # every u_i = v_i = e: E[pos] = E[neg] = 1, tr Var[u - v] = 0, ||E[u + v]||^2 = 4
    n = 5
    u = np.tile(np.eye(3)[0], (n, 1))
    ident = theory.alignment_identity(u, u)
    assert ident.lhs == pytest.approx(2.0) and ident.rhs == pytest.approx(2.0)
    # Lemma C.4 as printed: 1 - (n-1)/n E[pos] + (n-1)/n E[neg] = (1/2) tr Var + (1/2) ||E[u+v]||^2
    printed_lhs = 1 - (n - 1) / n * ident.positive_mean + (n - 1) / n * ident.negative_mean
    assert printed_lhs == pytest.approx(1.0)  # != 2.0


def test_theorem_5_2_equality_condition_is_wrong_but_the_tight_form_is_attained():
    # CCEM: u_i - v_i is constant (tr Var[u - v] = 0) and sum(u + v) = 0, the paper's equality
    # conditions; yet with delta > 0 the paper's bound is strict, while the tight one is equal.
    n = 6
    u, v = theory.ccem(n, n, 0.7)
    ident = theory.alignment_identity(u, v)
    assert ident.trace_var_difference == pytest.approx(0, abs=1e-14)
    assert ident.mean_sum_norm_sq == pytest.approx(0, abs=1e-14)
    paper = theory.positive_similarity_ceiling(ident.negative_mean, n)
    tight = theory.tight_positive_similarity_ceiling(ident.negative_mean, n)
    assert ident.positive_mean < paper - 0.1
    assert ident.positive_mean == pytest.approx(tight, abs=1e-12)


def test_lmcl_mean_distance_ceiling():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 40):
        ceiling = theory.lmcl_mean_distance_ceiling(n)
        assert ceiling == pytest.approx(n / (2 * n - 2))
        for _ in range(20):
            z = _random_unit(rng, n, 3)
            mean_distance = np.mean([(1 - z[i] @ z[j]) / 2 for i in range(n) for j in range(i)])
            assert mean_distance <= ceiling + 1e-12
    z = theory.simplex_etf(6, 5)  # rows sum to zero: the ceiling is attained
    mean_distance = np.mean([(1 - z[i] @ z[j]) / 2 for i in range(6) for j in range(i)])
    assert mean_distance == pytest.approx(theory.lmcl_mean_distance_ceiling(6), abs=1e-12)
    with pytest.raises(ValueError, match="^n"):
        theory.lmcl_mean_distance_ceiling(1)


def test_alignment_identity_rejects_non_unit_rows():
    with pytest.raises(ValueError, match="^u"):
        theory.alignment_identity(2 * np.eye(3), np.eye(3))
