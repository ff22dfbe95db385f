"""Half-precision (and float32) inputs against the float64 reference: the bounds of the
"Precision" section of docs/losses.md, the losses they cover, and the two kinds of inputs, shared
by the CPU tests (``test_precision.py``) and the CUDA tests (``test_cuda.py``).

Notation: ``u`` is the input dtype's unit roundoff (bfloat16 ``2^-8``, float16 ``2^-11``, float32
``2^-24``), ``s`` the scale of the logits (``1 / t``, SigLIP's ``scale``; 1 where the loss uses
the cosines themselves), ``c_L = sum |dL / dS|`` the loss's sensitivity to its logits (2 for the
exp family and SupCon: each anchor's log-sum-exp moves by at most the largest change of its
logits, its positive term by its own; see :data:`CASES`).

- **Random inputs** (:func:`random_inputs`). Each logit is formed from rows normalized in
  float32 and rounded to the input dtype (``u`` per entry, twice), the scaled row rounded
  (``u``) and the product rounded (``u``): ``|dS| <= 4 u s``. So ``|L - L64| <= c_L 4 u s``
  (:func:`loss_bound`). Each gradient entry is within ``(8 u s c_L + 6 u) max |g|``
  (:func:`gradient_bound`): the softmax (or sigmoid) weights move by ``2 |dS|`` relative, and
  six roundings of ``u`` follow (the weighted matrix twice, the backward product, the gradient
  buffer, the normalization's backward in and out). That holds where the gradient is
  Lipschitz in the logits: not for LMCL's band penalty, whose gradient jumps at the band's
  edges (a pair within ``|dS|`` of one may fall on either side).
- **Exact products** (:func:`grid_inputs`): unit rows with 1, 4 or 16 entries ``+-1/sqrt(k)``
  in 16 dimensions, whose products are multiples of 1/16, and scales 4 and 8 (t = 0.25,
  SigLIP's 8 and -4): every logit is exact in half precision, so the only error left in the
  loss is that of the reductions, which run in float32: ``|L - L64| <= 2^-18 max(1, |L|)``
  (:func:`exact_products_loss_bound`), far below one rounding of a log-sum-exp to bfloat16
  (``2^-8 |lse|``). A log-sum-exp, a softplus sum or a VRNS sum taken in half precision fails
  it; the gradients keep the backward's roundings, ``6 u max |g|``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from contrastkit import losses
from contrastkit.losses.kernels import common

from ._fast_reference import (
    class_labels,
    exp_family_reference,
    siglip_loop,
    supcon_dense,
    vrns_loop,
)

TEMPERATURE = 0.25  # scale 4: exact in every dtype
SIGLIP_SCALE, SIGLIP_BIAS = 8.0, -4.0
VRNS_N = 50
HALF = (torch.bfloat16, torch.float16)


def take_the_gpu_choices(monkeypatch) -> None:
    """Make the CPU take the kernels' GPU choices (``kernels.common.accelerated``): the plain
    path's reach, whole-matrix backward blocks, half-precision weighted blocks, half-precision
    products widened by the subtraction of their shift."""
    monkeypatch.setattr(common, "accelerated", lambda device: True)


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half the distance from 1 to the next number: ``2^-8`` for bfloat16, ``2^-11`` float16."""
    return torch.finfo(dtype).eps / 2


@dataclass(frozen=True)
class Case:
    """A loss as the tests call it (``call(u, v, labels, **options)``), its float64 reference
    (differentiable), the scale of its logits and its sensitivity ``c_L`` (a number, or a
    function of the float64 unit rows for a loss whose sensitivity depends on the data)."""

    call: Callable
    reference: Callable
    scale: float
    sensitivity: float | Callable
    chunked: bool = True
    smooth: bool = True  # a gradient Lipschitz in the logits (not LMCL's band penalty: a kink)


def _exp_family(name):
    return Case(lambda u, v, labels, **o: getattr(losses, name)(u, v, TEMPERATURE, **o),
                lambda u, v, labels: exp_family_reference(name, u, v, TEMPERATURE),
                1 / TEMPERATURE, 2.0)


def _siglip_sensitivity(u, v):
    """``(1/B) sum_ij sigmoid(+-(S_ij + b))``: eq. 9's derivative in each logit, summed."""
    logits = SIGLIP_SCALE * F.normalize(u, dim=1) @ F.normalize(v, dim=1).T + SIGLIP_BIAS
    signs = 1 - 2 * torch.eye(len(u), dtype=logits.dtype, device=logits.device)
    return float(torch.sigmoid(signs * logits).sum() / len(u))


def _supcon_reference(u, v, labels):
    z = torch.cat([F.normalize(u, dim=1), F.normalize(v, dim=1)])
    return supcon_dense(z, labels.cpu().repeat(2), TEMPERATURE)


def _spectral(u, v, labels, **options):
    return losses.spectral(u, v, **options)


def _polarization(u, v, labels, **options):
    return losses.polarization(u, v, views="all", **options)


def _hcl(u, v, labels, **options):
    return losses.hcl(u, v, temperature=0.5, beta=1.0, tau_plus=0.1, **options)


def _hucl(u, v, labels, **options):
    return losses.hucl(u, v, estimator="importance", beta=1.0, temperature=0.5, **options)


def _hscl(u, v, labels, **options):
    return losses.hscl(u, v, labels, estimator="importance", beta=1.0, temperature=0.5,
                       **options)


def _info_sym(u, v, labels, **options):
    return losses.info_sym(u, v, lambda x: torch.exp(x / TEMPERATURE), torch.log1p, 1, 1,
                           **options)


def _ind_add(u, v, labels, **options):
    return losses.ind_add(u, v, lambda x: x, torch.square, 1, 1, n=100, **options)


CASES = {
    **{name: _exp_family(name) for name in ("info_nce", "simclr", "dcl", "dhel")},
    "siglip": Case(
        lambda u, v, labels, **o: losses.siglip(u, v, SIGLIP_SCALE, SIGLIP_BIAS, **o),
        lambda u, v, labels: siglip_loop(u, v, SIGLIP_SCALE, SIGLIP_BIAS),
        SIGLIP_SCALE, _siglip_sensitivity),
    "supcon": Case(lambda u, v, labels, **o: losses.supcon(u, v, labels, TEMPERATURE, **o),
                   _supcon_reference, 1 / TEMPERATURE, 2.0),
    # sum over pairs of 2 |S + 1/(n-1)| / (B (B - 1)) <= 2 (1 + 1/(n-1))
    "vrns": Case(lambda u, v, labels, **o: losses.vrns(u, v, n=VRNS_N, **o),
                 lambda u, v, labels: vrns_loop(u, v, VRNS_N), 1.0, 2 * (1 + 1 / (VRNS_N - 1))),
    # spectral and polarization: the library's own float64 evaluation is the reference (their
    # tests check it against loops over pairs in float64, to 1e-12)
    # the positives' mean (1) and the squared negatives' (2 max |S| <= 2)
    "spectral": Case(_spectral, _spectral, 1.0, 3.0, chunked=False),
    # |dh/dS| = |delta_plus + delta_minus - 2 D| / 2 <= (delta_minus - delta_plus) / 2 = 0.2
    # the gradient jumps at the band's edges (a pair within |dS| of one may take either side):
    # checked on exact products only
    "polarization": Case(_polarization, _polarization, 1.0, 0.2, chunked=False,
                         smooth=False),
}

# plain-autograd losses that reduce in float32 after a half-precision product: checked for their
# dtypes and, on exact products, for float32 reductions (their sensitivity to the logits is not
# bounded by a constant: HCL's debiasing, the hard-negative weights, a user's phi and psi)
PLAIN_CASES = {
    "hcl": _hcl, "hscl": _hscl, "hucl": _hucl, "info_sym": _info_sym, "ind_add": _ind_add,
}


def sensitivity(case: Case, u64: torch.Tensor, v64: torch.Tensor) -> float:
    """``c_L`` of ``case`` on the float64 views."""
    return case.sensitivity(u64, v64) if callable(case.sensitivity) else case.sensitivity


def loss_bound(case: Case, dtype: torch.dtype, u64, v64, value64) -> float:
    """``c_L 4 u s``, plus the float32 reductions' own ``2^-18 max(1, |L|)``."""
    return (sensitivity(case, u64, v64) * 4 * unit_roundoff(dtype) * case.scale
            + exact_products_loss_bound(value64))


def gradient_bound(case: Case, dtype: torch.dtype, u64, v64, gradient64) -> float:
    """``(8 u s c_L + 6 u) max |g|``."""
    u_ = unit_roundoff(dtype)
    factor = 8 * u_ * case.scale * sensitivity(case, u64, v64) + 6 * u_
    return factor * float(gradient64.abs().max())


def exact_products_loss_bound(value) -> float:
    """Float32 reductions on exact logits: ``2^-18 max(1, |L|)``."""
    return 2**-18 * max(1.0, abs(float(value.detach())))


def exact_products_gradient_bound(dtype: torch.dtype, gradient64) -> float:
    return 6 * unit_roundoff(dtype) * float(gradient64.abs().max())


def random_inputs(batch: int, dim: int, seed: int, dtype: torch.dtype, device="cpu"):
    """Seeded random views in ``dtype`` on ``device`` (half-precision values, so that the
    float64 reference sees exactly the inputs the loss sees), with labels of three rows a class
    and one single row."""
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator)
    v = u + 0.5 * torch.randn(batch, dim, generator=generator)  # positives more alike
    return u.to(dtype).to(device), v.to(dtype).to(device), class_labels(batch).to(device)


def grid_inputs(batch: int, seed: int, dtype: torch.dtype, device="cpu"):
    """Unit rows in 16 dimensions with ``k`` in {1, 4, 16} entries ``+-1/sqrt(k)`` (a third of
    ``v``'s rows copy ``u``'s): every product of two rows is a multiple of 1/16, so the logits at
    scale 4 or 8 are exact in half precision (see the module docstring)."""
    generator = torch.Generator().manual_seed(seed)

    def rows():
        x = torch.zeros(batch, 16)
        for i in range(batch):
            k = (1, 4, 16)[int(torch.randint(3, (1,), generator=generator))]
            support = torch.randperm(16, generator=generator)[:k]
            signs = torch.randint(2, (k,), generator=generator) * 2.0 - 1.0
            x[i, support] = signs / math.sqrt(k)
        return x

    u, v = rows(), rows()
    v[::3] = u[::3]
    return u.to(dtype).to(device), v.to(dtype).to(device), class_labels(batch).to(device)


def value_and_grads(loss_fn, u, v, labels):
    """``loss_fn(u, v, labels)`` and its gradients in ``u``, ``v`` (leaves made here)."""
    u, v = (x.detach().clone().requires_grad_() for x in (u, v))
    value = loss_fn(u, v, labels)
    return value, torch.autograd.grad(value, (u, v))


def float64_reference(reference, u, v, labels):
    """The reference on the CPU, in float64, on exactly the inputs' values."""
    return value_and_grads(reference, u.cpu().double(), v.cpu().double(), labels.cpu())


def check_against_float64(case: Case, u, v, labels, exact_products: bool, **options):
    """The loss of ``case`` on ``u, v`` (any device and floating dtype) against the float64
    reference on the CPU: a float32 loss (float64 for float64 inputs), gradients in the inputs'
    dtype, both within the module docstring's bounds."""
    dtype = u.dtype
    value, grads = value_and_grads(lambda a, b, y: case.call(a, b, y, **options), u, v, labels)
    expected, expected_grads = float64_reference(case.reference, u, v, labels)
    u64, v64 = u.cpu().double(), v.cpu().double()
    assert value.dtype == torch.promote_types(dtype, torch.float32)
    assert all(grad.dtype == dtype and grad.device == u.device for grad in grads)
    error = abs(float(value.detach()) - float(expected.detach()))
    bound = (exact_products_loss_bound(expected) if exact_products
             else loss_bound(case, dtype, u64, v64, expected))
    assert error <= bound, f"loss off by {error:.3g}, bound {bound:.3g}"
    if not (exact_products or case.smooth):
        return
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        grad_error = float((grad.cpu().double() - expected_grad).abs().max())
        grad_bound = (exact_products_gradient_bound(dtype, expected_grad) if exact_products
                      else gradient_bound(case, dtype, u64, v64, expected_grad))
        assert grad_error <= grad_bound, f"gradient off by {grad_error:.3g}, bound {grad_bound:.3g}"


# ---- learnable settings ----------------------------------------------------------------------

LEARNABLE = {
    "info_nce": lambda: losses.InfoNCE(temperature=TEMPERATURE, learnable=True),
    "simclr": lambda: losses.SimCLR(temperature=TEMPERATURE, learnable=True),
    "siglip": lambda: losses.SigLIP(scale=SIGLIP_SCALE, bias=SIGLIP_BIAS, learnable=True),
}


def setting_gradient_bound(case: Case, dtype: torch.dtype, u64, v64, parameter: str) -> float:
    """The gradient in a learned setting. ``logit_scale`` (the log of the scale ``s``):
    ``dL/dlog s = sum_ij G_ij S_ij``, off by at most ``c_L (|dS| (s + 1) + u s)`` (the weights
    ``G`` move by ``2 |dS|`` relative, the logits by ``|dS|``, the rows' gradients are rounded):
    ``c_L u s (4 s + 5)``. ``logit_bias``: ``sum_ij +-sigmoid``, off by at most ``c_L |dS|``."""
    u_, s = unit_roundoff(dtype), case.scale
    factor = 4 * s + 5 if parameter == "logit_scale" else 4
    return sensitivity(case, u64, v64) * u_ * s * factor


def check_learnable(name: str, u, v, chunk_size=None):
    """The module of :data:`LEARNABLE` ``name`` (on ``u``'s device) on ``u, v`` against its
    float64 evaluation on the CPU (checked against loops by ``test_learnable.py``): the loss and
    the rows' gradients as :func:`check_against_float64` bounds them, the settings' gradients in
    float32 within :func:`setting_gradient_bound`."""
    case, dtype = CASES[name], u.dtype
    module = LEARNABLE[name]().to(u.device)
    module.chunk_size = chunk_size
    reference = LEARNABLE[name]()

    def evaluate(loss, a, b):
        a, b = (x.detach().clone().requires_grad_() for x in (a, b))
        value = loss(a, b)
        names, parameters = zip(*loss.named_parameters(), strict=True)
        *rows, = torch.autograd.grad(value, (a, b, *parameters))
        return value.detach(), rows[:2], dict(zip(names, rows[2:], strict=True))

    value, grads, setting_grads = evaluate(module, u, v)
    u64, v64 = u.cpu().double(), v.cpu().double()
    expected, expected_grads, expected_setting_grads = evaluate(reference, u64, v64)
    assert value.dtype == torch.float32 and all(grad.dtype == dtype for grad in grads)
    assert abs(float(value) - float(expected)) <= loss_bound(case, dtype, u64, v64, expected)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        grad_error = float((grad.cpu().double() - expected_grad).abs().max())
        assert grad_error <= gradient_bound(case, dtype, u64, v64, expected_grad)
    for parameter, grad in setting_grads.items():
        assert grad.dtype == torch.float32 and grad.device == u.device
        setting_error = abs(float(grad) - float(expected_setting_grads[parameter]))
        bound = setting_gradient_bound(case, dtype, u64, v64, parameter)
        assert setting_error <= bound, f"{parameter}: off by {setting_error:.3g}, bound {bound:.3g}"
