"""The symmetric kernel (losses/kernels/symmetric.py: candidates = anchors) against a dense float64
log-sum-exp, on both of its paths: one common shift, and the per-row fallback for rows whose
maxima are too far apart."""

from __future__ import annotations

import pytest
import torch

from contrastkit.losses.kernels import row_logsumexp
from contrastkit.losses.kernels.symmetric import _common_shift

SELF = "self"
SELF_AND_PARTNER = "self and partner"


def exclusions(n: int, kind: str) -> torch.Tensor:
    """Each row's own column, and for even ``n`` also its partner ``a +- n/2`` (SimCLR / DCL)."""
    own = torch.arange(n)
    if kind == SELF:
        return own.unsqueeze(1)
    return torch.stack([own, own.roll(n // 2)], dim=1)


def dense_lse(z: torch.Tensor, scale: float, excluded: torch.Tensor) -> torch.Tensor:
    """``log sum_{k not excluded} exp(scale z_a . z_k)`` on the full matrix, float64."""
    logits = scale * z.double() @ z.double().T
    return logits.scatter(1, excluded, -torch.inf).logsumexp(dim=1)


def unequal_rows(n: int, d: int) -> torch.Tensor:
    """Rows whose largest similarity to another row ranges from 1 (row 1 repeats row 0) down to
    about 0 (the last row is orthogonal to all others)."""
    z = torch.nn.functional.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(0),
                                                  dtype=torch.float64), dim=1)
    z[:, -1] = 0
    z[1] = z[0]
    z[-1] = 0
    z[-1, -1] = 1
    return torch.nn.functional.normalize(z, dim=1)


def random_rows(n: int, d: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=generator, dtype=torch.float64)


@pytest.mark.parametrize(("n", "kind"), [(2, SELF), (3, SELF), (11, SELF), (600, SELF),
                                         (4, SELF_AND_PARTNER), (8, SELF_AND_PARTNER),
                                         (600, SELF_AND_PARTNER)])
@pytest.mark.parametrize("scale", [1.0, 10.0, 400.0])
def test_value_and_gradient_equal_the_dense_logsumexp(n, kind, scale):
    """Odd and even row counts (the split after ceil(n / 2) rows), several scratch blocks
    (n = 600), and at scale 400 the per-row fallback."""
    z = random_rows(n, 5, seed=n).requires_grad_()
    excluded = exclusions(n, kind)
    weights = torch.linspace(-1.0, 2.0, n, dtype=torch.float64)
    value = row_logsumexp(z, z, scale, excluded)
    expected = dense_lse(z, scale, excluded)
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
    (grad,) = torch.autograd.grad((weights * value).sum(), z)
    (expected_grad,) = torch.autograd.grad((weights * expected).sum(), z)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-10, atol=1e-10 * scale)


@pytest.mark.parametrize(("dtype", "common_shift"), [(torch.float64, True),
                                                      (torch.float32, False)])
def test_rows_too_unequal_for_one_shift_fall_back_to_per_row_shifts(dtype, common_shift):
    """At scale 100 the row maxima span 100 nats: within float64's limit (354), beyond
    float32's (44). Both give the exact answer; the fallback keeps the whole matrix."""
    scale, n = 100.0, 10
    z = unequal_rows(n, 4)
    excluded = exclusions(n, SELF_AND_PARTNER)
    row_max = (scale * z @ z.T).scatter(1, excluded, -torch.inf).amax(dim=1)
    assert float(row_max.max() - row_max.min()) == pytest.approx(100.0, abs=1e-9)
    assert (_common_shift(row_max.to(dtype), dtype) is not None) == common_shift

    x = z.to(dtype).requires_grad_()
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t,
                                                  lambda t: t):
        value = row_logsumexp(x, x, scale, excluded)
    assert max(saved) == (n * n // 2 if common_shift else n * n)  # top half, or all
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    expected = dense_lse(z, scale, excluded)
    torch.testing.assert_close(value.double(), expected, rtol=tolerance, atol=tolerance)
    (grad,) = torch.autograd.grad(value.sum(), x)
    (expected_grad,) = torch.autograd.grad(dense_lse(z.requires_grad_(), scale, excluded).sum(), z)
    torch.testing.assert_close(grad.double(), expected_grad, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("scale", [3.0, 400.0])  # one shift; per-row fallback (span > 354)
def test_gradcheck_on_both_paths(scale):
    z = unequal_rows(6, 3).requires_grad_()
    excluded = exclusions(6, SELF_AND_PARTNER)
    assert torch.autograd.gradcheck(lambda x: row_logsumexp(x, x, scale, excluded), (z,))


def test_common_shift_is_the_centre_of_the_maxima_and_refuses_empty_rows():
    maxima = torch.tensor([-3.0, 5.0, 1.0])
    assert float(_common_shift(maxima, torch.float32)) == 1.0
    assert _common_shift(torch.tensor([0.0, -torch.inf]), torch.float32) is None
    assert _common_shift(torch.tensor([0.0, torch.nan]), torch.float64) is None


def test_under_bfloat16_autocast_it_agrees_with_the_general_kernel():
    """Products in bfloat16, reductions and gradients in float32, as in the general kernel
    (which gets a copy of the anchors as candidates, so it does not take the symmetric path)."""
    z = torch.nn.functional.normalize(random_rows(64, 16, seed=5), dim=1).float()
    excluded = exclusions(64, SELF_AND_PARTNER)
    results = []
    for symmetric in (True, False):
        x = z.clone().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            value = row_logsumexp(x, x if symmetric else x.clone(), 5.0, excluded)
        (grad,) = torch.autograd.grad(value.sum(), x)
        assert value.dtype == torch.float32 and grad.dtype == torch.float32
        results.append((value, grad))
    (value, grad), (general_value, general_grad) = results
    torch.testing.assert_close(value, general_value, rtol=0, atol=5e-2)
    torch.testing.assert_close(grad, general_grad, rtol=0, atol=5e-2)
