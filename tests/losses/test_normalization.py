"""The one row normalization (``unit_rows`` / ``row_norms``) and every caller: exact for every
finite row in every dtype, where squaring under- or overflows; a zero row stays zero."""

from __future__ import annotations

import pytest
import torch

from contrastkit import geometry, losses
from contrastkit.rows import ZERO_ROW_EPS, row_norms, unit_rows


def _tiny_half_rows() -> torch.Tensor:
    """float16 rows with entries from 1e-4 down to 1e-7 (squares below float16's range)."""
    generator = torch.Generator().manual_seed(0)
    magnitudes = 10.0 ** -torch.linspace(4, 7, 8, dtype=torch.float64)
    signs = torch.randint(0, 2, (5, 8), generator=generator).double() * 2 - 1
    shuffled = torch.stack([magnitudes[torch.randperm(8, generator=generator)] for _ in range(5)])
    return (signs * shuffled).half()


def _unit_rows_and_grad(x: torch.Tensor, weights: torch.Tensor):
    x = x.detach().requires_grad_()
    y = unit_rows(x)
    (grad,) = torch.autograd.grad((y.double() * weights).sum(), x)
    return y, grad


def test_tiny_float16_rows_have_finite_values_and_gradients_matching_float64():
    x = _tiny_half_rows()
    weights = torch.linspace(-1, 1, x.numel(), dtype=torch.float64).reshape(x.shape)
    y, grad = _unit_rows_and_grad(x, weights)
    y_ref, grad_ref = _unit_rows_and_grad(x.double(), weights)  # the same (rounded) inputs
    assert y.dtype == torch.float16 and grad.dtype == torch.float16
    assert bool(torch.isfinite(y).all()) and bool(torch.isfinite(grad).all())
    torch.testing.assert_close(y.double(), y_ref, rtol=2e-3, atol=1e-3)
    torch.testing.assert_close(grad.double(), grad_ref, rtol=1e-2,
                               atol=1e-2 * float(grad_ref.abs().max()))


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_a_loss_on_tiny_half_precision_rows_is_finite_and_matches_float64(half):
    u = _tiny_half_rows().to(half).requires_grad_()
    v = _tiny_half_rows().flip(0).to(half)
    value = losses.spectral(u, v)
    (grad,) = torch.autograd.grad(value, u)
    reference = losses.spectral(u.detach().double(), v.double())
    assert torch.isfinite(value) and bool(torch.isfinite(grad).all())
    assert float(value.detach()) == pytest.approx(float(reference), abs=2e-2)


@pytest.mark.parametrize("dtype, norm", [
    (torch.float32, 1e19), (torch.float32, 3e19), (torch.float32, 1e-30), (torch.float32, 1e-40),
    (torch.float64, 1e200), (torch.float64, 1e-200), (torch.float16, 1e-6), (torch.float16, 3e4),
])
def test_rows_whose_squares_overflow_or_underflow_normalize_to_unit_norm(dtype, norm):
    directions = torch.tensor([[3.0, 4.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    x = (directions / directions.norm(dim=1, keepdim=True) * norm).to(dtype)
    # the float64 reference of the rounded rows, rescaled first so that nothing overflows there
    expected = torch.nn.functional.normalize(x.double() / norm, dim=1)
    expected_norms = (x.double() / norm).norm(dim=1, keepdim=True) * norm
    tolerance = 10 * torch.finfo(dtype).eps
    unit = unit_rows(x)
    assert unit.dtype == dtype
    torch.testing.assert_close(unit.double(), expected, rtol=0, atol=tolerance)
    subnormal_spacing = torch.finfo(dtype).tiny * torch.finfo(dtype).eps  # a norm below tiny
    torch.testing.assert_close(row_norms(x).double(), expected_norms, rtol=tolerance,
                               atol=subnormal_spacing)
    torch.testing.assert_close(losses.normalize_features(x, "sphere"), unit)
    ball = losses.normalize_features(x, "ball").double()
    torch.testing.assert_close(ball, expected if norm > 1 else x.double(), rtol=tolerance, atol=0)


@pytest.mark.parametrize("norm", [3e19, 1e-30])
def test_losses_and_geometry_normalize_extreme_float32_rows(norm):
    generator = torch.Generator().manual_seed(1)
    u = torch.randn(6, 5, generator=generator, dtype=torch.float64)
    v = u + 0.1 * torch.randn(6, 5, generator=generator, dtype=torch.float64)
    scaled = [(x / x.norm(dim=1, keepdim=True) * norm).float() for x in (u, v)]
    # the same (rounded) directions as unit rows, normalized in float64 where nothing overflows
    rounded = [x.double() / x.double().norm(dim=1, keepdim=True) for x in scaled]
    for loss in (losses.simclr, losses.spectral, losses.Polarization(views="cross"),
                 lambda a, b: losses.vrns(a, b, n=100),
                 lambda a, b: losses.supcon(a, None, [0, 0, 0, 1, 1, 1])):
        torch.testing.assert_close(loss(*scaled).double(), loss(*rounded).double(),
                                   rtol=1e-5, atol=1e-5)
    stats = geometry.similarity_stats(*scaled)
    assert stats.positive_mean == pytest.approx(geometry.similarity_stats(*rounded).positive_mean,
                                                abs=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_zero_row_stays_zero_with_f_normalize_gradient(dtype):
    """As before (``F.normalize``): the zero row maps to zero and its gradient is the incoming
    gradient divided by 1e-12; the other rows are unaffected."""
    x = torch.tensor([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], dtype=dtype, requires_grad=True)
    weights = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]], dtype=dtype)
    y = unit_rows(x)
    (grad,) = torch.autograd.grad((y * weights).sum(), x)
    expected = torch.nn.functional.normalize(x, dim=1)
    (expected_grad,) = torch.autograd.grad((expected * weights).sum(), x)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(grad, expected_grad)
    torch.testing.assert_close(grad[0], weights[0] / ZERO_ROW_EPS)


def test_a_zero_row_stays_zero_in_half_precision():
    x = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float16)
    torch.testing.assert_close(unit_rows(x), torch.tensor([[0.0, 0.0], [0.6, 0.8]],
                                                          dtype=torch.float16))


def _unit_rows_formula(x: torch.Tensor) -> torch.Tensor:
    """``x_ij / sqrt(sum_k x_ik^2)`` written out, in plain autograd."""
    return x / x.square().sum(dim=-1, keepdim=True).sqrt()



def test_value_first_and_second_derivatives_equal_the_formula_float64():
    """The hand-written backward of the plain path against the formula in plain autograd:
    values, gradients, and the gradient of a function of the gradient (what a gradient penalty
    differentiates, which reaches the backward's gradient for the norms)."""
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(6, 5, dtype=torch.float64, generator=generator)
    weights = torch.randn(6, 5, dtype=torch.float64, generator=generator)
    results = []
    for function in (unit_rows, _unit_rows_formula):
        leaf = x.clone().requires_grad_()
        value = function(leaf)
        (grad,) = torch.autograd.grad((value * weights).sum(), leaf, create_graph=True)
        (second,) = torch.autograd.grad((grad * weights.flip(0)).square().sum(), leaf)
        results.append((value, grad, second))
    for computed, expected in zip(*results, strict=True):
        torch.testing.assert_close(computed, expected, rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradcheck(unit_rows, (x.clone().requires_grad_(),))
    assert torch.autograd.gradgradcheck(unit_rows, (x.clone().requires_grad_(),))
