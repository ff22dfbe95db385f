"""The two-way kernel (losses/kernels/two_way.py: the row and column log-sum-exps of one
``S = scale * x y^T``, InfoNCE's two directions), chunked and not, against a dense float64
log-sum-exp, on both of its paths: one shift (the running maximum), and the general kernel per
direction when a row or column sum leaves the range one shift can serve."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

from contrastkit.losses.infonce_family import exp_family_loss
from contrastkit.losses.kernels import common, two_way
from contrastkit.losses.kernels.two_way import two_way_logsumexp

from ._fast_reference import value_and_grads, views
from .test_fused_symmetric import LargestResult, random_rows, unequal_rows

OWN_COLUMN = "own column"


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts of the forward strips passes, of the backward's recomputed passes, and of the
    general kernel's forwards (one per direction)."""
    calls = {"strips": 0, "recomputed": 0, "general": 0}

    def counted(key, function):
        def wrapper(*args, **kwargs):
            calls[key] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(two_way, "running_exp_strips",
                        counted("strips", two_way.running_exp_strips))
    monkeypatch.setattr(two_way, "shifted_strips",
                        counted("recomputed", two_way.shifted_strips))
    monkeypatch.setattr(two_way, "chunked_logsumexp",
                        counted("general", two_way.chunked_logsumexp))
    return calls


def own_column(n: int, kind: str | None) -> torch.Tensor | None:
    return None if kind is None else torch.arange(n).unsqueeze(1)


def dense_two_way(x, y, scale, excluded):
    """Row and column log-sum-exps of the full ``scale * x y^T``, float64."""
    logits = scale * x.double() @ y.double().T
    if excluded is not None:
        logits = logits.scatter(1, excluded, -torch.inf)
    return logits.logsumexp(dim=1), logits.logsumexp(dim=0)


def values_and_grads(function, x, y):
    """Both outputs, and the gradients of a weighted sum of them (unequal weights, so that a
    swapped or dropped direction shows)."""
    x, y = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    rows, columns = function(x, y)
    weights = torch.linspace(-1.0, 2.0, len(x), dtype=rows.dtype)
    total = (weights * rows).sum() + (weights.flip(0) ** 2 * columns).sum()
    return (rows, columns), torch.autograd.grad(total, (x, y))


@pytest.mark.parametrize("n", [11, 12])
@pytest.mark.parametrize("kind", [None, OWN_COLUMN])
@pytest.mark.parametrize("chunk_size", [1, 3, 5, 8, None, 12])
@pytest.mark.parametrize("scratch_rows", [None, 4])
def test_equals_the_dense_logsumexps_float64(n, kind, chunk_size, scratch_rows, kernel_calls,
                                             monkeypatch):
    """Chunks that divide n and chunks that leave a short last strip, and one strip (``None``, or
    a chunk of at least n rows: kept for the backward, not recomputed), with no exclusion
    (InfoNCE) and the own column (the decoupled variant), unnormalized and unit-norm rows. With
    ``scratch_rows`` the backward weights each strip in blocks of that many rows (the default,
    256, takes every strip here whole)."""
    if scratch_rows is not None:
        monkeypatch.setattr(common, "SCRATCH_ROWS", scratch_rows)
    excluded = own_column(n, kind)
    for (x, y), scale in [((random_rows(n, 5, seed=n), random_rows(n, 5, seed=n + 1)), 1.0),
                          ((torch.nn.functional.normalize(random_rows(n, 5, seed=n + 2), dim=1),
                            torch.nn.functional.normalize(random_rows(n, 5, seed=n + 3), dim=1)),
                           10.0)]:
        chunked, chunked_grads = values_and_grads(
            partial(two_way_logsumexp, scale=scale, excluded=excluded, chunk_size=chunk_size),
            x, y)
        expected, expected_grads = values_and_grads(
            partial(dense_two_way, scale=scale, excluded=excluded), x, y)
        for value, reference in zip(chunked + chunked_grads, expected + expected_grads,
                                    strict=True):
            torch.testing.assert_close(value, reference, rtol=1e-12, atol=1e-12)
    recomputed = 0 if chunk_size is None or chunk_size >= n else 2
    assert kernel_calls == {"strips": 2, "recomputed": recomputed, "general": 0}


def cross_view_loop(u, v, t, include_positive):
    """The cross-view loss from its formula (eq. 13's first line for InfoNCE), one pair at a time
    in float64: ``-u_i.v_i / t + log sum_j exp(u_i.v_j / t)`` averaged over both directions, the
    sum leaving out ``j = i`` when the positive is not in the normalizer."""
    u, v = (torch.nn.functional.normalize(view.detach().double(), dim=1) for view in (u, v))
    n, total = len(u), 0.0
    for anchors, candidates in ((u, v), (v, u)):
        for i in range(n):
            terms = [math.exp(float(anchors[i] @ candidates[j]) / t)
                     for j in range(n) if include_positive or j != i]
            total += math.log(sum(terms)) - float(anchors[i] @ candidates[i]) / t
    return torch.tensor(total / (2 * n), dtype=torch.float64)


@pytest.mark.parametrize("include_positive", [True, False])
def test_cross_view_losses_take_the_two_way_kernel(include_positive, kernel_calls):
    """InfoNCE (and the cross-view loss without the positive in its normalizer): one strips pass
    for both directions, chunked or not; the same value and gradients chunked as unchunked, and
    as the float64 reference of the formula."""
    def loss(u, v, chunk_size=None):
        return exp_family_loss(u, v, 0.3, cross_view=True, within_view=False,
                               include_positive=include_positive, chunk_size=chunk_size)

    u, v = views(10, 6, seed=31)
    value, grads = value_and_grads(loss, u, v)
    assert kernel_calls == {"strips": 1, "recomputed": 0, "general": 0}
    reference = cross_view_loop(u, v, 0.3, include_positive)
    torch.testing.assert_close(value, reference, rtol=1e-13, atol=1e-13)
    chunked, chunked_grads = value_and_grads(lambda a, b: loss(a, b, chunk_size=3), u, v)
    torch.testing.assert_close(chunked, value, rtol=1e-13, atol=1e-13)
    for grad, chunked_grad in zip(grads, chunked_grads, strict=True):
        torch.testing.assert_close(chunked_grad, grad, rtol=1e-12, atol=1e-13)
    assert kernel_calls == {"strips": 2, "recomputed": 1, "general": 0}


@pytest.mark.parametrize(("dtype", "two_way_path"), [(torch.float64, True),
                                                      (torch.float32, False)])
@pytest.mark.parametrize("chunk_size", [3, None])
def test_sums_too_far_below_the_shift_fall_back_to_the_general_path(
        dtype, two_way_path, chunk_size, kernel_calls):
    """At scale 100 the shift is the largest entry, 100 (rows 0 and 1 are equal), and the row
    (and column) of the orthogonal last row sums to about exp(-100) once its own column is left
    out: representable in float64, not in float32, which runs the general chunked kernel in each
    direction. Both are exact."""
    scale, n = 100.0, 10
    z = unequal_rows(n, 4)
    excluded = own_column(n, OWN_COLUMN)
    chunked, chunked_grads = values_and_grads(
        lambda a, b: two_way_logsumexp(a, b, scale, excluded, chunk_size), z.to(dtype), z.to(dtype))
    recomputed = int(two_way_path and chunk_size is not None)
    assert kernel_calls == {"strips": 1, "recomputed": recomputed,
                            "general": 0 if two_way_path else 2}
    expected, expected_grads = values_and_grads(
        lambda a, b: dense_two_way(a, b, scale, excluded), z, z)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    for value, reference in zip(chunked, expected, strict=True):
        torch.testing.assert_close(value.double(), reference, rtol=tolerance, atol=tolerance)
    for value, reference in zip(chunked_grads, expected_grads, strict=True):
        torch.testing.assert_close(value.double(), reference, rtol=tolerance,
                                   atol=tolerance * scale)


@pytest.mark.parametrize("scale", [3.0, 400.0])  # one shift; general fallback
@pytest.mark.parametrize("chunk_size", [4, None])
def test_gradcheck_on_both_paths(scale, chunk_size, kernel_calls):
    x = unequal_rows(6, 3).requires_grad_()
    y = random_rows(6, 3, seed=4).requires_grad_()
    excluded = own_column(6, OWN_COLUMN)
    assert torch.autograd.gradcheck(
        lambda a, b: two_way_logsumexp(a, b, scale, excluded, chunk_size), (x, y))
    assert (kernel_calls["general"] > 0) == (scale > 354)


def test_forward_and_backward_form_at_most_one_strip():
    """No operator returns more than ``chunk_size x n`` elements (a strip, its weighted copy);
    unchunked, the kept strip and its weighted copy are ``n x n``."""
    n, chunk_size = 64, 8
    x, y = (torch.nn.functional.normalize(random_rows(n, 4, seed=seed), dim=1).float()
            .requires_grad_() for seed in (5, 6))
    largest = []
    for chunk in (chunk_size, None):
        with LargestResult() as mode:
            sum(lse.sum() for lse in two_way_logsumexp(x, y, 5.0, None, chunk)).backward()
        largest.append(mode.largest)
    assert largest == [chunk_size * n, n * n]
