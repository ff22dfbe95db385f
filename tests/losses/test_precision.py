"""Half-precision embeddings: every loss takes bfloat16 and float16 inputs, forms its similarity
products in that dtype and reduces them in float32, returning a float32 loss and gradients in the
inputs' dtype, within the bounds of the "Precision" section of docs/losses.md of the float64
reference (see ``_precision.py`` for the bounds and the inputs). The same checks run on CUDA in
``test_cuda.py``."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit import losses
from contrastkit.losses.kernels import common

from ._precision import (
    CASES,
    HALF,
    LEARNABLE,
    PLAIN_CASES,
    check_against_float64,
    check_learnable,
    exact_products_gradient_bound,
    exact_products_loss_bound,
    grid_inputs,
    random_inputs,
    take_the_gpu_choices,
    value_and_grads,
)

PATHS = ["small", "fused", "chunked"]


def _options(name, path, monkeypatch):
    """The loss options and the threshold that put ``name`` on ``path``: the plain-autograd
    small path, the fused kernels (this folder's default) or the chunked kernels, each as the
    CPU takes it or, ``"... (gpu choices)"``, as a GPU would (:func:`take_the_gpu_choices`),
    with backward blocks of 4 rows, so that the backward takes several."""
    if path.endswith(GPU_CHOICES):
        take_the_gpu_choices(monkeypatch)
        monkeypatch.setattr(common, "SCRATCH_ROWS", 4)
        monkeypatch.setattr(common, "GPU_SCRATCH_ENTRIES", 0)
        path = path.removesuffix(GPU_CHOICES)
    if path == "small":
        monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 10**9)
    return {"chunk_size": 5} if path == "chunked" else {}


GPU_CHOICES = " (gpu choices)"


def _cases(paths=PATHS):
    return [(name, path) for name, case in CASES.items() for path in paths
            if path != "chunked" or case.chunked]


def _kernel_cases_both_ways():
    return [*_cases(), *((name, path + GPU_CHOICES) for name, path in _cases(["fused", "chunked"]))]


@pytest.mark.parametrize("dtype", [*HALF, torch.float32])
@pytest.mark.parametrize(("name", "path"), _kernel_cases_both_ways())
def test_within_the_stated_bound_of_float64_on_random_inputs(name, path, dtype, monkeypatch):
    options = _options(name, path, monkeypatch)
    u, v, labels = random_inputs(24, 16, seed=3, dtype=dtype)
    check_against_float64(CASES[name], u, v, labels, exact_products=False, **options)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize(("name", "path"), _kernel_cases_both_ways())
def test_exact_products_leave_only_float32_reductions(name, path, dtype, monkeypatch):
    """Logits exact in half precision: a log-sum-exp, softplus sum or VRNS sum taken in half
    precision would be off by about 2^-8 of its value, 2^10 times the bound."""
    options = _options(name, path, monkeypatch)
    u, v, labels = grid_inputs(24, seed=5, dtype=dtype)
    check_against_float64(CASES[name], u, v, labels, exact_products=True, **options)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", PLAIN_CASES)
def test_plain_autograd_losses_reduce_in_float32(name, dtype):
    loss = PLAIN_CASES[name]
    u, v, labels = grid_inputs(24, seed=5, dtype=dtype)
    value, grads = value_and_grads(loss, u, v, labels)
    expected, expected_grads = value_and_grads(loss, u.double(), v.double(), labels)
    assert value.dtype == torch.float32 and all(grad.dtype == dtype for grad in grads)
    error = abs(float(value.detach()) - float(expected.detach()))
    assert error <= exact_products_loss_bound(expected)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        error = float((grad.double() - expected_grad).abs().max())
        assert error <= exact_products_gradient_bound(dtype, expected_grad)


# ---- what runs in half precision ---------------------------------------------------------------

_PRODUCTS = {"mm", "addmm", "bmm", "baddbmm", "addmm_"}
# reductions whose result half precision would round (max, min and the max-norm are exact)
_ROUNDING_REDUCTIONS = {"sum", "mean", "logsumexp", "_log_softmax", "_softmax", "cumsum", "prod",
                        "var", "std", "nansum", "_log_softmax_backward_data",
                        "_softmax_backward_data", "nll_loss_forward", "nll_loss_backward",
                        "dot", "vdot"}


class _Dispatched(TorchDispatchMode):
    """Records each matrix product (its operands' shapes and dtypes) and each reduction that
    takes and returns half precision."""

    def __init__(self):
        super().__init__()
        self.products, self.half_reductions = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        results = [o for o in (out if isinstance(out, tuple | list) else [out])
                   if isinstance(o, torch.Tensor)]
        if name in _PRODUCTS:
            self.products.append([(tuple(t.shape), t.dtype) for t in [*tensors, *results]])
        elif (name in _ROUNDING_REDUCTIONS and tensors and results
              and tensors[0].dtype in HALF and results[0].dtype in HALF):
            self.half_reductions.append((name, tuple(tensors[0].shape)))
        elif name == "linalg_vector_norm" and tensors[0].dtype in HALF and args[1:2] != (
                float("inf"),):
            self.half_reductions.append((name, tuple(tensors[0].shape)))
        return out


def _every_loss():
    """Every registered loss with its defaults (labels where it uses them), the learnable
    settings, and the plain-autograd functions."""
    built = {name: losses.build(name, {"n": 1000}) for name in losses.names(regularizers=True)}
    built["info_nce_learnable"] = losses.InfoNCE(learnable=True)
    built["simclr_learnable"] = losses.SimCLR(learnable=True)
    built["siglip_learnable"] = losses.SigLIP(learnable=True)
    calls = {name: (lambda m: lambda u, v, y: m(u, v, y))(module)
             for name, module in built.items()}
    return {**calls, **PLAIN_CASES}


EVERY_LOSS = _every_loss()


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("chunk_size", [None, 7])
@pytest.mark.parametrize("name", EVERY_LOSS)
def test_products_run_in_half_precision_and_no_reduction_does(name, chunk_size, dtype):
    """Half-precision views: a float32 loss, gradients in the views' dtype, every product that
    involves a batch x batch matrix in that dtype (none is silently upcast; VRNS's and the
    spectral loss's sums of squared similarities are float64 on purpose, from d x d Gram
    matrices or, for VRNS, B <= 2d similarities), and no reduction of the forward or backward
    rounding its result to half precision."""
    batch, dim = 40, 32  # B <= 2d: the spectral loss forms its similarities (VRNS in float64)
    u, v, labels = random_inputs(batch, dim, seed=2, dtype=dtype)
    loss = EVERY_LOSS[name]
    if chunk_size is not None:
        if not (name in losses.names(regularizers=True) and losses.get(name).supports_chunking):
            pytest.skip("no chunked path")
        chunked = losses.build(name, {"n": 1000}, chunk_size=chunk_size)
        loss = lambda a, b, y: chunked(a, b, y)  # noqa: E731
    u.requires_grad_(), v.requires_grad_()
    with _Dispatched() as seen:
        value = loss(u, v, labels)
        value.backward()
    assert value.dtype == torch.float32 and u.grad.dtype == v.grad.dtype == dtype
    assert seen.half_reductions == []
    # the products with a block of a similarity matrix: a batch of columns, rows not d
    batch_sized = [operands for operands in seen.products
                   if any(max(shape) >= batch and min(shape) != dim for shape, _ in operands)]
    if name != "vrns":
        assert batch_sized and all(product_dtype == dtype for operands in batch_sized
                                   for _, product_dtype in operands), batch_sized


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("path", [*PATHS, "fused" + GPU_CHOICES])
@pytest.mark.parametrize("name", LEARNABLE)
def test_learnable_settings_with_half_precision_rows(name, path, dtype, monkeypatch):
    options = _options(name, path, monkeypatch)
    u, v, _ = random_inputs(24, 16, seed=4, dtype=dtype)
    check_learnable(name, u, v, **options)
