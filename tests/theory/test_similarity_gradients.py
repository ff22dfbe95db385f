"""theory.similarity_gradient (central paper, Theorem 5.6 / C.18): the closed-form gradient of
InfoNCE, SimCLR and DCL with respect to the cross-view similarities, against autograd in
float64 (on the similarities as free variables, and through the paper's Def. 3.1 written
literally), and the theorem itself over nested batches of random embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contrastkit import losses, theory

# Table 2 of the paper: psi and (c1, c2) of each loss (phi(x) = exp(x / t))
TABLE_2 = {"info_nce": (torch.log1p, 1, 0), "simclr": (torch.log1p, 1, 1),
           "dcl": (torch.log, 1, 1)}


def _pairs(m: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    u, v = (torch.nn.functional.normalize(
        torch.randn(m, d, generator=generator, dtype=torch.float64), dim=1) for _ in range(2))
    return u, v


def _loss_of_similarities(cross, within_u, within_v, t: float, loss: str) -> torch.Tensor:
    """The symmetric loss as a function of the similarity matrices (each anchor's term a
    log-sum-exp over what it is normalized against, minus its positive logit)."""
    m = cross.shape[0]
    eye = torch.eye(m, dtype=torch.bool)
    own = SETTINGS[loss]
    candidates = cross.masked_fill(eye, -math.inf) if not own["include_positive"] else cross
    rows, columns = candidates / t, candidates.T / t
    if own["within_view"]:
        rows = torch.cat([rows, within_u.masked_fill(eye, -math.inf) / t], dim=1)
        columns = torch.cat([columns, within_v.masked_fill(eye, -math.inf) / t], dim=1)
    positive = cross.diagonal() / t
    return 0.5 * ((torch.logsumexp(rows, 1) - positive).mean()
                  + (torch.logsumexp(columns, 1) - positive).mean())


SETTINGS = theory.SIMILARITY_GRADIENT_LOSSES


@pytest.mark.parametrize("loss", ["info_nce", "simclr", "dcl"])
@pytest.mark.parametrize("m, d, t", [(2, 3, 0.5), (7, 4, 0.1), (16, 8, 1.0), (5, 32, 0.02)])
def test_the_closed_form_is_the_gradient_in_the_similarities(loss, m, d, t):
    u, v = _pairs(m, d, seed=m)
    cross = (u @ v.T).requires_grad_()
    _loss_of_similarities(cross, u @ u.T, v @ v.T, t, loss).backward()
    closed = theory.similarity_gradient(u, v, t, loss)
    np.testing.assert_allclose(closed, cross.grad.numpy(), rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("loss", ["info_nce", "simclr", "dcl"])
def test_the_closed_form_is_the_gradient_of_definition_3_1(loss):
    """Through the paper's Def. 3.1 as written (losses.info_sym with Table 2's row), the
    similarities made free by extra coordinates: u' = [u, E], v' = [v, I] at E = 0."""
    psi, c1, c2 = TABLE_2[loss]
    m, t = 9, 0.3
    u, v = _pairs(m, 5, seed=1)
    extra = torch.zeros(m, m, dtype=torch.float64, requires_grad=True)
    value = losses.info_sym(torch.cat([u, extra], 1), torch.cat([v, torch.eye(m).double()], 1),
                            phi=lambda x: torch.exp(x / t), psi=psi, c1=c1, c2=c2,
                            normalize=False)
    value.backward()
    np.testing.assert_allclose(theory.similarity_gradient(u, v, t, loss), extra.grad.numpy(),
                               rtol=1e-10)


def test_at_one_similarity_level_the_gradient_is_the_scalar_closed_form():
    """At the simplex ETF (u_i = v_i, every negative -1/(n-1)): dL/ds_ij = (1/(mt)) e^{s/t} /
    (e^{1/t} + (m-1) e^{s/t}), for the nested batch [m] of the n points."""
    n, t = 12, 0.2
    etf = theory.simplex_etf(n, n)
    s = -1 / (n - 1)
    for m in (2, 3, 6, 12):
        gradient = theory.similarity_gradient(etf[:m], etf[:m], t)
        expected = math.exp(s / t) / (m * t * (math.exp(1 / t) + (m - 1) * math.exp(s / t)))
        off = ~np.eye(m, dtype=bool)
        np.testing.assert_allclose(gradient[off], expected, rtol=1e-12)


@pytest.mark.parametrize("loss", ["info_nce", "simclr", "dcl"])
@pytest.mark.parametrize("seed", range(5))
def test_theorem_5_6_on_nested_batches(loss, seed):
    """For m1 < m2 and every negative pair of [m1]: 0 < G^(m2)_ij <= (m1/m2) G^(m1)_ij (so the
    gradient grows strictly as the batch shrinks; InfoNCE is the theorem, SimCLR and DCL the
    same argument)."""
    u, v = _pairs(24, 6, seed)
    t = (0.05, 0.1, 0.5, 1.0, 3.0)[seed]
    gradients = {m: theory.similarity_gradient(u[:m], v[:m], t, loss) for m in (2, 3, 8, 24)}
    for m1, m2 in ((2, 3), (3, 8), (8, 24), (2, 24)):
        off = ~np.eye(m1, dtype=bool)
        smaller, larger = gradients[m1][off], gradients[m2][:m1, :m1][off]
        assert (larger > 0).all()
        assert (larger <= m1 / m2 * smaller * (1 + 1e-12)).all()


def test_the_diagonal_is_the_positive_pairs_derivative():
    u, v = _pairs(6, 3, seed=3)
    for loss in ("info_nce", "simclr"):
        gradient = theory.similarity_gradient(u, v, 0.5, loss)
        assert (np.diag(gradient) < 0).all()
    assert np.allclose(np.diag(theory.similarity_gradient(u, v, 0.5, "dcl")), -1 / (6 * 0.5))


@pytest.mark.parametrize("args, message", [
    ((np.ones((1, 3)), np.ones((1, 3)), 0.5), "u must be a finite array of shape"),
    ((np.ones((2, 3)), np.ones((3, 3)), 0.5), "u and v must have the same shape"),
    ((np.ones((2, 3)), np.full((2, 3), np.nan), 0.5), "non-finite"),
    ((np.ones((2, 3)), np.ones((2, 3)), 0.0), "temperature must be > 0"),
])
def test_bad_input_is_named(args, message):
    with pytest.raises(ValueError, match=message):
        theory.similarity_gradient(*args)


def test_an_unknown_loss_is_named():
    with pytest.raises(ValueError, match="loss must be one of"):
        theory.similarity_gradient(np.eye(2), np.eye(2), 1.0, "dhel")
