"""The losses on a CUDA device, against the float64 reference on the CPU: every loss's small,
fused and chunked paths in float32, bfloat16 and float16, the exact-product inputs, the
plain-autograd losses, and the learned temperature and SigLIP scale and bias, with the bounds of
docs/losses.md ("Precision"; see ``_precision.py``). Skipped without a CUDA device (the ``cuda``
marker). Products accumulate in float32 here (:func:`float32_accumulation`)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from ._precision import (
    CASES,
    HALF,
    LEARNABLE,
    PLAIN_CASES,
    SIGLIP_BIAS,
    SIGLIP_SCALE,
    check_against_float64,
    check_learnable,
    exact_products_gradient_bound,
    exact_products_loss_bound,
    grid_inputs,
    random_inputs,
    value_and_grads,
)
from .test_precision import GPU_CHOICES, PATHS, _kernel_cases_both_ways, _options

DEVICE = "cuda"
pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def float32_accumulation(monkeypatch):
    """The bounds assume products accumulated in float32: no TF32 for float32 products, no
    half-precision reduction of a split product (cuBLAS may, by default)."""
    if torch.cuda.is_available():
        matmul = torch.backends.cuda.matmul
        monkeypatch.setattr(matmul, "allow_tf32", False)
        monkeypatch.setattr(matmul, "allow_bf16_reduced_precision_reduction", False)
        monkeypatch.setattr(matmul, "allow_fp16_reduced_precision_reduction", False)


@pytest.mark.parametrize("dtype", [torch.float32, *HALF])
@pytest.mark.parametrize(("name", "path"), _kernel_cases_both_ways())
def test_within_the_stated_bound_of_float64(name, path, dtype, monkeypatch):
    """``... (gpu choices)``: the backward in blocks of 4 rows (``_options``)."""
    options = _options(name, path, monkeypatch)
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype, device=DEVICE)
    check_against_float64(CASES[name], u, v, labels, exact_products=False, **options)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize(("name", "path"), _kernel_cases_both_ways())
def test_exact_products_leave_only_float32_reductions(name, path, dtype, monkeypatch):
    options = _options(name, path, monkeypatch)
    u, v, labels = grid_inputs(24, seed=5, dtype=dtype, device=DEVICE)
    check_against_float64(CASES[name], u, v, labels, exact_products=True, **options)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", PLAIN_CASES)
def test_plain_autograd_losses_reduce_in_float32(name, dtype):
    loss = PLAIN_CASES[name]
    u, v, labels = grid_inputs(24, seed=5, dtype=dtype, device=DEVICE)
    value, grads = value_and_grads(loss, u, v, labels)
    expected, expected_grads = value_and_grads(loss, u.cpu().double(), v.cpu().double(),
                                               labels.cpu())
    assert value.dtype == torch.float32 and value.device == u.device
    assert all(grad.dtype == dtype and grad.device == u.device for grad in grads)
    error = abs(float(value.detach()) - float(expected.detach()))
    assert error <= exact_products_loss_bound(expected)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        grad_error = float((grad.cpu().double() - expected_grad).abs().max())
        assert grad_error <= exact_products_gradient_bound(dtype, expected_grad)


@pytest.mark.parametrize("dtype", [torch.float32, *HALF])
@pytest.mark.parametrize("path", [*PATHS, "fused" + GPU_CHOICES])
@pytest.mark.parametrize("name", LEARNABLE)
def test_learned_temperature_and_siglip_scale_and_bias(name, path, dtype, monkeypatch):
    options = _options(name, path, monkeypatch)
    u, v, _ = random_inputs(24, 16, seed=4, dtype=dtype, device=DEVICE)
    check_learnable(name, u, v, **options)


# ---- the Triton passes of the unchunked kernels (kernels.triton_passes) -----------------------

# (loss, dtype) that take the passes (kernels.whole_matrix.applies): InfoNCE's two-way
# log-sum-exps in half precision, SigLIP's softplus sum in every dtype; SimCLR, DCL, DHEL and
# SupCon (the symmetric kernel) and InfoNCE in float32 keep the eager kernels
_TRITON = [("info_nce", dtype) for dtype in HALF] + [("siglip", dtype)
                                                    for dtype in (torch.float32, *HALF)]
_EAGER = [(name, dtype) for name in ("info_nce", "simclr", "dcl", "dhel", "siglip", "supcon")
          for dtype in (torch.float32, torch.bfloat16) if (name, dtype) not in _TRITON]


@pytest.fixture
def triton_calls(monkeypatch):
    """Each call of a Triton pass, recorded."""
    from contrastkit.losses.kernels import triton_passes

    calls = []
    for name in ("logsumexp", "softmax_weights", "softplus_sigmoid_"):
        original = getattr(triton_passes, name)
        monkeypatch.setattr(triton_passes, name,
                            lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    return calls


@pytest.mark.parametrize(("name", "dtype"), _TRITON)
def test_the_unchunked_kernels_take_the_triton_passes(name, dtype, triton_calls):
    """The fused unchunked path above is these passes on a GPU: checked that it is."""
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype, device=DEVICE)
    check_against_float64(CASES[name], u, v, labels, exact_products=False)
    assert triton_calls


@pytest.mark.parametrize(("name", "dtype"), _EAGER)
def test_the_other_unchunked_kernels_stay_eager(name, dtype, triton_calls):
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype, device=DEVICE)
    check_against_float64(CASES[name], u, v, labels, exact_products=False)
    assert not triton_calls


@pytest.mark.parametrize(("name", "dtype"), _TRITON)
def test_the_eager_kernels_without_the_passes(name, dtype, monkeypatch, triton_calls):
    """``triton_passes.ENABLED = False`` (a machine without Triton, the benchmark's comparison):
    the eager unchunked kernels on the GPU."""
    from contrastkit.losses.kernels import triton_passes

    monkeypatch.setattr(triton_passes, "ENABLED", False)
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype, device=DEVICE)
    check_against_float64(CASES[name], u, v, labels, exact_products=False)
    assert not triton_calls


@pytest.mark.parametrize("name", ["info_nce", "siglip"])
def test_the_passes_at_a_batch_beyond_the_plain_path(name, monkeypatch, triton_calls):
    """Past the GPU's plain-autograd reach (B = 4500 > 4096) with the library's own thresholds,
    in bfloat16: the tiles of the GPU, several column splits, against float64."""
    from contrastkit.losses.kernels import common

    monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 256 * 256)  # undo this folder's 0
    u, v, labels = random_inputs(4500, 32, seed=19, dtype=torch.bfloat16, device=DEVICE)
    case = CASES[name]
    if name == "siglip":  # eq. 9 on the whole float64 matrix (the loop reference takes hours)
        case = dataclasses.replace(case, reference=_siglip_matrix)
    check_against_float64(case, u, v, labels, exact_products=False)
    assert triton_calls


def _siglip_matrix(u, v, labels):
    """Eq. (9) in logit form over the whole matrix: label +1 on the diagonal, -1 elsewhere."""
    logits = SIGLIP_SCALE * F.normalize(u, dim=1) @ F.normalize(v, dim=1).T + SIGLIP_BIAS
    signs = 2 * torch.eye(len(u), dtype=logits.dtype) - 1
    return F.softplus(-signs * logits).sum() / len(u)
