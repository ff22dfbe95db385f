"""The Triton passes of the GPU's unchunked kernels (``kernels.triton_passes``, through
``kernels.whole_matrix`` and ``softplus_sum``), run by Triton's interpreter on the CPU: every
loss built on them against its float64 reference within the "Precision" bounds of
docs/losses.md, in float32, bfloat16 and float16, on random inputs and on exact products, and
with learnable settings. Run by ``test_triton_passes.py`` in a process started with
``TRITON_INTERPRET=1`` (Triton reads it when imported); not collected on its own."""

from __future__ import annotations

import os

import pytest
import torch

from contrastkit.losses.kernels import triton_passes

from ._precision import (
    CASES,
    HALF,
    check_against_float64,
    check_learnable,
    grid_inputs,
    random_inputs,
)

# the losses whose unchunked kernels take the passes in half precision (log-sum-exps both ways,
# InfoNCE; the softplus sum, SigLIP, in float32 too); the one-way log-sum-exp with exclusions
# is checked on its own (test_one_way_with_excluded_columns)
NAMES = ["info_nce", "siglip"]

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="needs a process started with TRITON_INTERPRET=1")


@pytest.fixture(autouse=True)
def passes_counted(monkeypatch):
    """The passes on the CPU (the interpreter), each call counted: a case that never reached
    them would check the eager kernels instead, so every test asserts that it did."""
    monkeypatch.setattr(triton_passes, "INTERPRET_ON_CPU", True)
    calls = []
    for name in ("logsumexp", "softmax_weights", "softplus_sigmoid_"):
        original = getattr(triton_passes, name)
        monkeypatch.setattr(triton_passes, name,
                            lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    yield calls
    assert calls, "no Triton pass ran"


@pytest.mark.parametrize(("name", "dtype"), [*((name, dtype) for name in NAMES for dtype in HALF),
                                             ("siglip", torch.float32)])
def test_random_inputs_within_the_bound_of_float64(name, dtype):
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype)
    check_against_float64(CASES[name], u, v, labels, exact_products=False)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", NAMES)
def test_exact_products_leave_only_float32_reductions(name, dtype):
    u, v, labels = grid_inputs(24, seed=5, dtype=dtype)
    check_against_float64(CASES[name], u, v, labels, exact_products=True)


@pytest.mark.parametrize("name", NAMES)
def test_learnable_settings_get_their_gradients(name):
    u, v, _ = random_inputs(24, 16, seed=7, dtype=torch.bfloat16)
    check_learnable(name, u, v)


def test_a_large_temperature_range_stays_finite(passes_counted):
    """t = 0.01 with rows whose largest logits differ by far more than float32's exponent range
    allows one shift for: each row and column keeps its own running maximum."""
    from contrastkit import losses

    u, v, _ = random_inputs(40, 16, seed=11, dtype=torch.float16)
    # unnormalized: logits from about 0 to 100 s
    u = u * torch.linspace(0.01, 1, 40, dtype=torch.float16).unsqueeze(1)
    u.requires_grad_()
    value = losses.info_nce(u, v, temperature=0.01, normalize=False)
    value.backward()
    expected = losses.info_nce(u.detach().double(), v.double(), temperature=0.01,
                               normalize=False)
    assert torch.isfinite(u.grad).all()
    assert abs(float(value.detach()) - float(expected)) <= 1e-4 * abs(float(expected))


@pytest.mark.parametrize("name", NAMES)
def test_many_tiles_and_split_columns(name, monkeypatch):
    """Tiles of 4 x 8 entries and a few programs per split: rows, columns and the split of the
    column reductions each span several tiles, with ragged edges."""
    monkeypatch.setattr(triton_passes, "_ROWS", 4)
    monkeypatch.setattr(triton_passes, "_COLUMNS", 8)
    monkeypatch.setattr(triton_passes, "_MIN_PROGRAMS", 64)
    u, v, labels = random_inputs(21, 8, seed=13, dtype=torch.bfloat16)
    check_against_float64(CASES[name], u, v, labels, exact_products=False)


def test_the_tiles_of_a_gpu_at_a_size_that_splits_the_columns():
    """The tile sizes the GPU compiles, on a matrix large enough for two splits of each
    column's reduction (600 rows: more than 4 x 128)."""
    u, v, labels = random_inputs(600, 8, seed=17, dtype=torch.bfloat16)
    check_against_float64(CASES["info_nce"], u, v, labels, exact_products=False)


@pytest.mark.parametrize("dtype", HALF)
def test_one_way_with_excluded_columns(dtype):
    """``row_logsumexp`` with candidates other than the anchors and two excluded columns per
    row (as InfoNCE's distributed path and the decoupled losses ask), value and gradients,
    against the float64 log-sum-exp of the same rounded products."""
    from contrastkit.losses.kernels import row_logsumexp

    x, y, _ = random_inputs(30, 8, seed=23, dtype=dtype)
    excluded = torch.stack([torch.arange(30), (torch.arange(30) + 7) % 30], dim=1)
    weights = torch.linspace(-1, 1, 30, dtype=torch.float64)

    def value(a, b):
        logits = (a * 2.0) @ b.T
        if a.dtype == torch.float64:  # the rounded products the kernel forms
            logits = logits.to(dtype).double()
        return (logits.scatter(1, excluded, float("-inf")).logsumexp(dim=1) * weights).sum()

    x, y = x.requires_grad_(), y.requires_grad_()
    lse = row_logsumexp(x, y, 2.0, excluded)
    (lse.double() * weights).sum().backward()
    x64, y64 = (t.detach().double().requires_grad_() for t in (x, y))
    expected = value(x64, y64)
    expected.backward()
    assert abs(float((lse.detach().double() * weights).sum()) - float(expected)) <= 1e-5
    for grad, grad64 in ((x.grad, x64.grad), (y.grad, y64.grad)):
        bound = 8 * 2.0**-8 * float(grad64.abs().max())
        assert float((grad.double() - grad64).abs().max()) <= bound
