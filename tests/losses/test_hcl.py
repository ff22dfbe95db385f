"""HCL (Robinson et al. 2021): the authors' criterion as a float64 reference, the SimCLR
identity, the log-space computation where (beta + 1)/t > 88, gradients, bad input."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from tests.losses._reference_family import hcl_reference


def views(seed, batch=6, dim=5, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, dim, generator=g, dtype=dtype),
            torch.randn(batch, dim, generator=g, dtype=dtype))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "temperature, beta, tau_plus",
    [(0.5, 1.0, 0.1), (0.5, 0.0, 0.1), (0.2, 2.0, 0.0), (1.0, 6.0, 0.05), (0.1, 0.5, 0.1)],
)
def test_matches_authors_criterion(seed, temperature, beta, tau_plus):
    u, v = views(seed)
    got = losses.hcl(u, v, temperature=temperature, beta=beta, tau_plus=tau_plus)
    assert got.item() == pytest.approx(hcl_reference(u, v, temperature, beta, tau_plus),
                                       rel=1e-10)


def test_floor_active_matches_reference_with_finite_gradient():
    # a large class prior drives R - tau_plus N pos below 0, so N_g sits at its floor N e^{-1/t}
    u, v = views(4)
    v = u + 0.01 * v  # strong positives
    u.requires_grad_(True)
    got = losses.hcl(u, v, temperature=0.5, beta=1.0, tau_plus=0.9)
    assert got.item() == pytest.approx(hcl_reference(u.detach(), v, 0.5, 1.0, 0.9), rel=1e-10)
    got.backward()
    assert torch.isfinite(u.grad).all()


@pytest.mark.parametrize("temperature", [0.05, 0.2, 0.5, 1.0])
def test_beta_zero_tau_zero_is_simclr(temperature):
    u, v = views(5, batch=8)
    got = losses.hcl(u, v, temperature=temperature, beta=0.0, tau_plus=0.0)
    assert got.item() == pytest.approx(losses.simclr(u, v, temperature).item(), rel=1e-10)


def test_hardness_and_debiasing_change_the_loss():
    u, v = views(6, batch=8)
    plain = losses.hcl(u, v, 0.5, beta=0.0, tau_plus=0.0).item()
    assert losses.hcl(u, v, 0.5, beta=2.0, tau_plus=0.0).item() > plain  # Theorem 1 (k = inf)
    assert losses.hcl(u, v, 0.5, beta=0.0, tau_plus=0.1).item() != pytest.approx(plain)


@pytest.mark.parametrize("beta, temperature", [(5.0, 0.05), (10.0, 0.02), (3.0, 0.01)])
def test_float32_no_overflow_when_exponent_exceeds_88(beta, temperature):
    assert (beta + 1) / temperature > 88
    u64, v64 = views(7, batch=8)
    v64 = u64 + 0.3 * v64
    u32, v32 = u64.float().requires_grad_(True), v64.float()
    got = losses.hcl(u32, v32, temperature=temperature, beta=beta, tau_plus=0.1)
    got.backward()
    assert torch.isfinite(got) and torch.isfinite(u32.grad).all()
    expected = hcl_reference(u64, v64, temperature, beta, 0.1)  # float64 raw exp is still finite
    assert got.item() == pytest.approx(expected, rel=1e-4)


def test_gradcheck():
    u, v = views(8, batch=4, dim=3)
    u.requires_grad_(True)
    v.requires_grad_(True)
    fn = lambda a, b: losses.hcl(a, b, temperature=0.5, beta=1.0, tau_plus=0.1)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (u, v))


def test_detach_weights_keeps_value_changes_gradient():
    u, v = views(9)
    grads = []
    for detach in (False, True):
        a = u.clone().requires_grad_(True)
        value = losses.hcl(a, v, 0.5, beta=2.0, tau_plus=0.0, detach_weights=detach)
        value.backward()
        grads.append((value.item(), a.grad))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-14)
    assert not torch.allclose(grads[0][1], grads[1][1])


def test_module():
    u, v = views(10)
    module = losses.HCL(temperature=0.5, beta=1.0, tau_plus=0.1)
    assert module.name == "hcl" and not module.uses_labels
    assert module(u, v).item() == pytest.approx(losses.hcl(u, v).item(), rel=1e-14)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"beta": -0.1}, "beta"),
        ({"beta": float("nan")}, "beta"),
        ({"tau_plus": -0.01}, "tau_plus"),
        ({"tau_plus": 1.0}, "tau_plus"),
        ({"tau_plus": 1.5}, "tau_plus"),
        ({"temperature": 0.0}, "temperature"),
    ],
)
def test_bad_options(kwargs, name):
    u, v = views(11)
    with pytest.raises(ValueError, match=name):
        losses.hcl(u, v, **kwargs)
    with pytest.raises(ValueError, match=name):
        losses.HCL(**kwargs)


def test_bad_views():
    u, v = views(12)
    with pytest.raises(ValueError, match="batch of at least 2"):
        losses.hcl(u[:1], v[:1])
