"""The losses behave as the central paper's theorems say."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from contrastkit import losses, theory


def _etf_closed_forms(n):
    """Loss values implied by Theorem 5.1: positive similarity 1, negatives -1/(n-1)."""
    neg = -1.0 / (n - 1)
    softplus = lambda x: math.log1p(math.exp(x))  # noqa: E731
    return {
        "info_nce": lambda t: math.log1p((n - 1) * math.exp((neg - 1) / t)),
        "simclr": lambda t: math.log1p(2 * (n - 1) * math.exp((neg - 1) / t)),
        "dcl": lambda t: math.log(2 * (n - 1)) + (neg - 1) / t,
        "dhel": lambda t: math.log(n - 1) + (neg - 1) / t,
        "siglip": lambda scale, bias: softplus(-(scale + bias)) + (n - 1) * softplus(
            scale * neg + bias
        ),
        "spectral": lambda: -1.0 + neg**2,
    }


def _optimum_losses():
    # SigLIP with (t, b) = (10, 10) is in case (iii) of Theorem 5.1 (condition (10) fails).
    return {
        "info_nce": (lambda u, v: losses.info_nce(u, v, 0.1), ("info_nce", 0.1)),
        "simclr": (lambda u, v: losses.simclr(u, v, 0.2), ("simclr", 0.2)),
        "dcl": (lambda u, v: losses.dcl(u, v, 0.1), ("dcl", 0.1)),
        "dhel": (lambda u, v: losses.dhel(u, v, 0.1), ("dhel", 0.1)),
        "siglip": (lambda u, v: losses.siglip(u, v, 10.0, -10.0), ("siglip", 10.0, -10.0)),
        "spectral": (losses.spectral, ("spectral",)),
    }


@pytest.mark.parametrize("n", [3, 8])
@pytest.mark.parametrize("name", list(_optimum_losses()))
def test_theorem_5_1_simplex_etf_value_and_local_optimality(name, n):
    loss, (key, *params) = _optimum_losses()[name]
    # spectral's psi(x) = x^2 is not increasing, so Theorem 5.1 holds for it only when the
    # ETF is a tight frame, d = n - 1 (see the next test); the others are checked in d = n + 1.
    dim = n - 1 if name == "spectral" else n + 1
    etf = torch.from_numpy(theory.simplex_etf(n, dim))
    at_optimum = float(loss(etf, etf))
    assert at_optimum == pytest.approx(_etf_closed_forms(n)[key](*params), rel=1e-12)
    generator = torch.Generator().manual_seed(n)
    for _ in range(20):
        u = F.normalize(etf + 1e-2 * torch.randn(etf.shape, generator=generator, dtype=etf.dtype))
        v = F.normalize(etf + 1e-2 * torch.randn(etf.shape, generator=generator, dtype=etf.dtype))
        assert float(loss(u, v)) > at_optimum


@pytest.mark.parametrize("n", [3, 8])
def test_spectral_prefers_orthogonal_negatives_when_d_is_at_least_n(n):
    """Table 3 puts spectral in Def. 3.2, but psi(x) = x^2 is not increasing: with room for
    n orthogonal unit vectors, negatives at 0 beat the simplex ETF's -1/(n-1)."""
    etf = torch.from_numpy(theory.simplex_etf(n, n))
    orthogonal = torch.eye(n, dtype=torch.float64)
    assert float(losses.spectral(orthogonal, orthogonal)) == pytest.approx(-1.0)
    assert float(losses.spectral(orthogonal, orthogonal)) < float(losses.spectral(etf, etf))


def test_vrns_vanishes_at_the_full_batch_optimum():
    etf = torch.from_numpy(theory.simplex_etf(10, 12))
    assert float(losses.vrns(etf, etf, n=10)) == pytest.approx(0.0, abs=1e-28)
    assert float(losses.vrns(etf, etf, n=10, within_view=True)) == pytest.approx(0.0, abs=1e-28)


def _negative_similarity_gradients(similarities: torch.Tensor, temperature: float):
    """d InfoNCE / d s_ij, taking the similarity matrix itself as the variable: with u = I and
    v = S^T (normalize=False), u_i . v_j = S_ij exactly."""
    similarities = similarities.clone().requires_grad_(True)
    identity = torch.eye(similarities.shape[0], dtype=similarities.dtype)
    loss = losses.info_nce(identity, similarities.T, temperature, normalize=False)
    (grad,) = torch.autograd.grad(loss, similarities)
    return grad


@pytest.mark.parametrize("seed", range(5))
def test_theorem_5_6_negative_gradient_is_nonnegative_and_larger_for_smaller_batch(seed):
    m2, temperature = 12, 0.3
    generator = torch.Generator().manual_seed(seed)
    u = F.normalize(torch.randn(m2, 6, generator=generator, dtype=torch.float64))
    v = F.normalize(torch.randn(m2, 6, generator=generator, dtype=torch.float64))
    similarities = u @ v.T
    grad_large = _negative_similarity_gradients(similarities, temperature)
    off_diagonal = ~torch.eye(m2, dtype=torch.bool)
    assert bool((grad_large[off_diagonal] >= 0).all())
    for m1 in (2, 5, 11):
        grad_small = _negative_similarity_gradients(similarities[:m1, :m1], temperature)
        inner = ~torch.eye(m1, dtype=torch.bool)
        assert bool((grad_small[inner] > grad_large[:m1, :m1][inner]).all())
    same = _negative_similarity_gradients(similarities, temperature)
    assert torch.equal(same, grad_large)  # equality iff m1 = m2
