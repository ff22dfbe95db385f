"""Batched sigmoid-loss problems (contrastkit.simulate.sigmoid) against slow references: the
library's SigLIP loss and autograd, one problem at a time, and the theory's optimum."""

from __future__ import annotations

import pytest
import torch
from torch.nn.functional import normalize

from contrastkit import losses, theory
from contrastkit.simulate.sigmoid import (
    _loss_gradient,
    encoder_sigmoid_runs,
    free_sigmoid_runs,
    normalized_positive,
    sigmoid_loss_batch,
)

TS = torch.tensor([0.3, 1.0, 2.5, 4.0], dtype=torch.float64)
BS = torch.tensor([0.3, -0.5, 1.0, 4.0], dtype=torch.float64)


def _batch(problems=4, n=6, d=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (normalize(torch.randn(problems, n, d, generator=generator, dtype=torch.float64),
                      dim=-1) for _ in range(2))


def test_the_batched_loss_is_siglip_of_each_problem():
    u, v = _batch()
    batched = sigmoid_loss_batch(u, v, TS, BS)
    one_by_one = [losses.siglip(u[p], v[p], scale=float(TS[p]), bias=-float(BS[p]))
                  for p in range(len(TS))]
    assert torch.allclose(batched, torch.stack(one_by_one), rtol=1e-12, atol=0)


def test_the_hand_written_gradient_is_autograds():
    u, v = (x.requires_grad_() for x in _batch())
    sigmoid_loss_batch(u, v, TS, BS).sum().backward()
    grad_u, grad_v = _loss_gradient(u.detach(), v.detach(), TS, BS)
    assert torch.allclose(grad_u, u.grad, rtol=1e-12, atol=1e-15)
    assert torch.allclose(grad_v, v.grad, rtol=1e-12, atol=1e-15)


def test_the_problems_of_a_batch_do_not_interact():
    u1, v1 = free_sigmoid_runs(6, 6, [0.7, 1.0], steps=50, seed=3)
    u2, v2 = free_sigmoid_runs(6, 6, [0.7, 4.0], steps=50, seed=3)
    assert torch.equal(u1[0], u2[0]) and torch.equal(v1[0], v2[0])
    assert not torch.equal(u1[1], u2[1])


def test_steps_0_returns_the_start_on_the_sphere():
    u, v = free_sigmoid_runs(5, 3, [1.0, 2.0, 3.0], steps=0)
    assert u.shape == v.shape == (3, 5, 3)
    assert torch.allclose(u.norm(dim=-1), torch.ones(3, 5, dtype=torch.float64))


@pytest.mark.parametrize("t", [0.3, 1.0, 2.0])  # N = 8: antipodal, intermediate, ETF
def test_free_embeddings_reach_the_theorys_optimum_for_d_n(t):
    u, v = free_sigmoid_runs(8, 8, [t], steps=3000, seed=1)
    optimum = theory.sigmoid_optimum(8, t, t)
    both = torch.tensor([t], dtype=torch.float64)
    loss = float(sigmoid_loss_batch(u, v, both, both)[0])
    assert loss - optimum.loss < 1e-9 and loss >= optimum.loss - 1e-12
    assert float(normalized_positive(u, v)[0]) == pytest.approx(optimum.normalized_positive,
                                                                  abs=1e-6)


@pytest.mark.slow
def test_the_encoder_reaches_the_theorys_optimum_for_d_n():
    ts = [0.3, 1.0, 2.0]
    u, v = encoder_sigmoid_runs(8, 8, ts, hidden=64, steps=1500, seed=0)
    assert u.shape == (3, 8, 8) and not u.requires_grad
    expected = [theory.sigmoid_optimum(8, t, t).normalized_positive for t in ts]
    assert normalized_positive(u, v).tolist() == pytest.approx(expected, abs=2e-3)


@pytest.mark.parametrize("call, message", [
    (lambda: free_sigmoid_runs(4, 4, [1.0, -1.0]), "t must be > 0, got -1"),
    (lambda: free_sigmoid_runs(4, 4, []), "ts must hold at least one"),
    (lambda: free_sigmoid_runs(4, 4, [1.0], [1.0, 2.0]), r"bs must hold one bias per "
                                                          r"temperature \(1\), got 2"),
    (lambda: free_sigmoid_runs(1, 4, [1.0]), "n must be"),
    (lambda: encoder_sigmoid_runs(4, 4, [1.0], hidden=0), "hidden must be"),
    (lambda: free_sigmoid_runs(4, 4, [1.0], lr=0), "lr must be > 0"),
])
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
