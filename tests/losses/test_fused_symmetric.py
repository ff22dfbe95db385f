"""The symmetric kernel (losses/kernels/symmetric.py: candidates = anchors) against a dense float64
log-sum-exp, on both of its paths: one common shift, and the per-row fallback for rows whose
maxima are too far apart; unchunked and chunked (strips of the upper triangle, falling back to
the general chunked path)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit.losses.kernels import row_logsumexp
from contrastkit.losses.kernels import symmetric as symmetric_module
from contrastkit.losses.kernels.symmetric import _common_shift

from ._fast_reference import fast, value_and_grads, views

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


# --- chunked (chunk_size < n): strips of the upper triangle, one shift (the running maximum) ---


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts of the chunked symmetric kernel's strips pass and of the general chunked forward it
    falls back to."""
    calls = {"strips": 0, "general": 0}

    def counted(key, function):
        def wrapper(*args, **kwargs):
            calls[key] += 1
            return function(*args, **kwargs)
        return wrapper

    module = symmetric_module
    monkeypatch.setattr(module, "running_exp_strips",
                        counted("strips", module.running_exp_strips))
    monkeypatch.setattr(module, "chunked_logsumexp", counted("general", module.chunked_logsumexp))
    return calls


def value_and_grad(z, scale, excluded, chunk_size):
    x = z.detach().clone().requires_grad_()
    value = row_logsumexp(x, x, scale, excluded, chunk_size)
    weights = torch.linspace(-1.0, 2.0, len(z), dtype=value.dtype)
    (grad,) = torch.autograd.grad((weights * value).sum(), x)
    return value, grad


@pytest.mark.parametrize(("n", "kind"), [(11, SELF), (12, SELF_AND_PARTNER),
                                         (40, SELF_AND_PARTNER)])
@pytest.mark.parametrize("chunk_size", [1, 3, 5, 8, 10])
def test_chunked_equals_unchunked_float64(n, kind, chunk_size, kernel_calls):
    """Chunks that divide n and chunks that leave a short last strip, the exclusions of SimCLR
    (own column) and DCL (and the partner's), unit-norm and unnormalized rows."""
    excluded = exclusions(n, kind)
    for z, scale in [(random_rows(n, 5, seed=n), 1.0),
                     (torch.nn.functional.normalize(random_rows(n, 5, seed=n + 1), dim=1), 10.0)]:
        value, grad = value_and_grad(z, scale, excluded, None)
        chunked, chunked_grad = value_and_grad(z, scale, excluded, chunk_size)
        torch.testing.assert_close(chunked, value, rtol=1e-13, atol=1e-13)
        torch.testing.assert_close(chunked_grad, grad, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(value, dense_lse(z, scale, excluded), rtol=1e-12, atol=1e-12)
    assert kernel_calls == {"strips": 2, "general": 0}  # one forward pass each


@pytest.mark.parametrize("name", ["simclr", "dcl", "dhel", "supcon"])
def test_losses_on_one_process_take_the_chunked_symmetric_kernel(name, kernel_calls):
    """SimCLR, DCL, SupCon ([u; v] against itself) and DHEL (each view against itself) at
    t = 0.3: the same value and gradients as unchunked, through the strips."""
    u, v = views(10, 6, seed=30)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b), u, v)
    chunked, chunked_grads = value_and_grads(lambda a, b: fast(name, a, b, chunk_size=3), u, v)
    torch.testing.assert_close(chunked, value, rtol=1e-13, atol=1e-13)
    for grad, chunked_grad in zip(grads, chunked_grads, strict=True):
        torch.testing.assert_close(chunked_grad, grad, rtol=1e-12, atol=1e-13)
    calls = 2 if name == "dhel" else 1  # one kernel per view, or both views stacked
    assert kernel_calls == {"strips": calls, "general": 0}


@pytest.mark.parametrize(("dtype", "symmetric_path"), [(torch.float64, True),
                                                        (torch.float32, False)])
def test_chunked_rows_too_far_below_the_shift_fall_back_to_the_general_chunked_path(
        dtype, symmetric_path, kernel_calls):
    """At scale 100 the shift is the largest entry, 100 (rows 0 and 1 are equal), and the
    orthogonal last row's sum is about exp(-100): representable in float64 (limit exp(-354)),
    not in float32 (exp(-44)), which takes the general chunked path. Both are exact."""
    scale, n, chunk_size = 100.0, 10, 3
    z = unequal_rows(n, 4)
    excluded = exclusions(n, SELF_AND_PARTNER)
    value, grad = value_and_grad(z.to(dtype), scale, excluded, chunk_size)
    assert kernel_calls == ({"strips": 1, "general": 0} if symmetric_path
                            else {"strips": 1, "general": 1})
    _, expected_grad = value_and_grad(z, scale, excluded, None)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(value.double(), dense_lse(z, scale, excluded),
                               rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(grad.double(), expected_grad, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("scale", [3.0, 400.0])  # one shift; general chunked fallback
def test_chunked_gradcheck_on_both_paths(scale, kernel_calls):
    z = unequal_rows(6, 3).requires_grad_()
    excluded = exclusions(6, SELF_AND_PARTNER)
    assert torch.autograd.gradcheck(lambda x: row_logsumexp(x, x, scale, excluded, 4), (z,))
    assert (kernel_calls["general"] > 0) == (scale > 354)


class LargestResult(TorchDispatchMode):
    """The largest number of elements of any tensor an ATen operator returns."""

    largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for leaf in out if isinstance(out, tuple | list) else (out,):
            if isinstance(leaf, torch.Tensor):
                self.largest = max(self.largest, leaf.numel())
        return out


@pytest.mark.parametrize(("chunk_size", "largest"), [(8, 8 * 64), (None, 64 * 32 + 32 * 32)])
def test_chunked_forward_and_backward_form_at_most_one_strip(chunk_size, largest):
    """No operator of the chunked forward + backward returns more than ``chunk_size x n``
    elements (the first strip and its weighted copy); unchunked, the kernel forms the top half
    and the corner (3/4 of the matrix) in one storage."""
    n = 64
    z = torch.nn.functional.normalize(random_rows(n, 4, seed=3), dim=1).float().requires_grad_()
    with LargestResult() as mode:
        row_logsumexp(z, z, 5.0, exclusions(n, SELF_AND_PARTNER), chunk_size).sum().backward()
    assert mode.largest == largest
