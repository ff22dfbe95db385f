"""Temperature, scale and bias as tensors: gradients through the fused, chunked and symmetric
kernels against the slow loop references (float64), the modules' ``learnable=True`` parameters
(CLIP's and SigLIP's initialisations, the clamp of the scale at 100), and bad values."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import losses
from contrastkit.losses.learnable import learned_settings
from tests.conftest import random_views

from . import _reference as ref
from ._reference_family import (
    hard_negative_importance_reference,
    hcl_reference,
    supcon_reference,
    unit_rows,
)

LABELS = torch.tensor([0, 1, 0, 2, 1])
HSCL_OPTIONS = dict(estimator="importance", beta=1.5, k=8)


def _fused(name):
    """``f(u, v, settings, chunk_size)``: the library's loss with tensor settings."""
    exp_family = {"info_nce": losses.info_nce, "simclr": losses.simclr, "dcl": losses.dcl,
                  "dhel": losses.dhel}
    if name in exp_family:
        return lambda u, v, s, chunk: exp_family[name](u, v, s["temperature"], chunk_size=chunk)
    return {
        "supcon": lambda u, v, s, chunk: losses.supcon(u, v, LABELS, s["temperature"],
                                                       chunk_size=chunk),
        "siglip": lambda u, v, s, chunk: losses.siglip(u, v, s["scale"], s["bias"],
                                                       chunk_size=chunk),
        "hcl": lambda u, v, s, chunk: losses.hcl(u, v, s["temperature"], beta=1.0,
                                                 tau_plus=0.1),
        "hscl": lambda u, v, s, chunk: losses.hscl(u, v, LABELS, temperature=s["temperature"],
                                                   **HSCL_OPTIONS),
    }[name]


def _reference(name):
    """``f(u, v, settings)`` in Python floats, from the formula (rows normalized here)."""
    exp_family = {"info_nce": ref.info_nce, "simclr": ref.simclr, "dcl": ref.dcl,
                  "dhel": ref.dhel}
    if name in exp_family:
        return lambda u, v, s: exp_family[name](unit_rows(u), unit_rows(v), s["temperature"])
    return {
        "supcon": lambda u, v, s: supcon_reference(u, v, LABELS, s["temperature"]),
        # the papers' (t, b) are (scale, -bias)
        "siglip": lambda u, v, s: ref.sigmoid(unit_rows(u), unit_rows(v), s["scale"],
                                              -s["bias"]),
        "hcl": lambda u, v, s: hcl_reference(u, v, s["temperature"], 1.0, 0.1),
        "hscl": lambda u, v, s: hard_negative_importance_reference(
            unit_rows(u), unit_rows(v), LABELS, candidates="other_classes",
            temperature=s["temperature"], hardness=1.5, k=8),
    }[name]


SETTINGS = {"info_nce": {"temperature": 0.3}, "simclr": {"temperature": 0.3},
            "dcl": {"temperature": 0.3}, "dhel": {"temperature": 0.3},
            "supcon": {"temperature": 0.3}, "siglip": {"scale": 7.0, "bias": -3.0},
            "hcl": {"temperature": 0.5}, "hscl": {"temperature": 0.4}}
FUSED = ("info_nce", "simclr", "dcl", "dhel", "supcon", "siglip")  # hand-written backward
CASES = [(name, None) for name in SETTINGS] + [(name, 2) for name in FUSED]


def _tensors(settings: dict) -> dict:
    return {key: torch.tensor(value, dtype=torch.float64, requires_grad=True)
            for key, value in settings.items()}


def _numeric_gradient(f, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Central differences of the float function ``f`` at every entry of ``x``."""
    grad = torch.zeros_like(x)
    for index in range(x.numel()):
        step = torch.zeros_like(x).view(-1)
        step[index] = eps
        step = step.view_as(x)
        grad.view(-1)[index] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize(("name", "chunk_size"), CASES)
def test_gradcheck_with_respect_to_embeddings_and_settings(name, chunk_size):
    u, v = random_views(5, 4, seed=7)
    settings = _tensors(SETTINGS[name])
    keys = list(settings)

    def f(u, v, *values):
        return _fused(name)(u, v, dict(zip(keys, values, strict=True)), chunk_size)

    inputs = (u.requires_grad_(), v.requires_grad_(), *settings.values())
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "chunk_size"), CASES)
def test_value_and_gradients_match_the_loop_reference(name, chunk_size):
    """The fused loss's autograd gradients w.r.t. u, v and each setting equal the central
    differences of the slow float64 loop reference, and so does its value."""
    u, v = random_views(5, 4, seed=8)
    u.requires_grad_(True)
    v.requires_grad_(True)
    tensors = _tensors(SETTINGS[name])
    value = _fused(name)(u, v, tensors, chunk_size)
    value.backward()
    reference = _reference(name)
    settings = dict(SETTINGS[name])
    u0, v0 = u.detach(), v.detach()
    assert float(value.detach()) == pytest.approx(reference(u0, v0, settings), rel=1e-10, abs=1e-12)
    expected = {
        "u": _numeric_gradient(lambda x: reference(x, v0, settings), u0),
        "v": _numeric_gradient(lambda x: reference(u0, x, settings), v0),
    }
    for key in settings:
        expected[key] = _numeric_gradient(
            lambda x, key=key: reference(u0, v0, {**settings, key: float(x)}),
            torch.tensor(settings[key], dtype=torch.float64))
    actual = {"u": u.grad, "v": v.grad, **{key: t.grad for key, t in tensors.items()}}
    for key, grad in expected.items():
        torch.testing.assert_close(actual[key], grad, rtol=1e-6, atol=1e-8, msg=key)


MODULES = {
    "info_nce": lambda **kw: losses.InfoNCE(**kw),
    "simclr": lambda **kw: losses.SimCLR(**kw),
    "dcl": lambda **kw: losses.DCL(**kw),
    "dhel": lambda **kw: losses.DHEL(**kw),
    "supcon": lambda **kw: losses.SupCon(**kw),
    "hcl": lambda **kw: losses.HCL(**kw),
    "hscl": lambda **kw: losses.HSCL(**HSCL_OPTIONS, **kw),
    "ucl": lambda **kw: losses.UCL(estimator="importance", **kw),
}


@pytest.mark.parametrize("name", MODULES)
def test_learnable_temperature_starts_at_clip_initialisation(name):
    loss = MODULES[name](learnable=True)
    assert [key for key, _ in loss.named_parameters()] == ["logit_scale"]
    assert float(loss.logit_scale.detach()) == pytest.approx(math.log(1 / 0.07), rel=1e-7)
    assert loss.temperature == pytest.approx(0.07, rel=1e-6)
    assert loss.settings()["temperature"] == loss.temperature
    assert "(learned)" in repr(loss)


@pytest.mark.parametrize("name", MODULES)
def test_a_given_temperature_is_the_initial_value(name):
    loss = MODULES[name](temperature=0.25, learnable=True)
    assert float(loss.logit_scale.detach()) == pytest.approx(math.log(4.0), rel=1e-7)


@pytest.mark.parametrize("name", MODULES)
def test_learnable_module_gradient_is_the_chain_rule_of_the_tensor_gradient(name):
    """d loss / d logit_scale = d loss / d t * d t / d logit_scale = -t d loss / d t."""
    u, v = random_views(5, 4, seed=9)
    loss = MODULES[name](temperature=0.3, learnable=True).double()
    loss(u, v, LABELS).backward()
    t = torch.tensor(loss.temperature, dtype=torch.float64, requires_grad=True)
    MODULES[name](temperature=t)(u, v, LABELS).backward()
    torch.testing.assert_close(loss.logit_scale.grad, -float(t.detach()) * t.grad, rtol=1e-10,
                               atol=1e-12)


def test_siglip_learnable_starts_at_siglip_initialisation_and_learns_both():
    loss = losses.SigLIP(learnable=True)
    assert float(loss.logit_scale.detach()) == pytest.approx(math.log(10.0), rel=1e-7)
    assert float(loss.logit_bias.detach()) == -10.0
    assert loss.learned() == pytest.approx({"scale": 10.0, "bias": -10.0}, rel=1e-6)
    u, v = random_views(5, 4, seed=10)
    loss.double()(u, v).backward()
    scale = torch.tensor(loss.scale, dtype=torch.float64, requires_grad=True)
    bias = torch.tensor(loss.bias, dtype=torch.float64, requires_grad=True)
    losses.siglip(u, v, scale, bias).backward()
    # d loss / d log s = s * d loss / d s
    torch.testing.assert_close(loss.logit_scale.grad, float(scale.detach()) * scale.grad)
    torch.testing.assert_close(loss.logit_bias.grad, bias.grad)


@pytest.mark.parametrize("make", [
    lambda: losses.SimCLR(learnable=True),
    lambda: losses.SigLIP(learnable=True),
])
def test_the_scale_is_clamped_at_100(make):
    """A parameter pushed past log 100 is projected back at the next forward (CLIP's clamp):
    the loss is that of scale 100 and the parameter reads log 100."""
    loss = make()
    with torch.no_grad():
        loss.logit_scale.fill_(math.log(1000.0))
    u, v = random_views(6, 3, seed=11, dtype=torch.float32)
    shown = loss.settings()
    value = loss(u, v)
    if isinstance(loss, losses.SigLIP):
        assert shown["scale"] == pytest.approx(100.0, rel=1e-6)
        expected = losses.siglip(u, v, scale=float(loss.logit_scale.detach().exp()), bias=loss.bias)
    else:
        assert shown["temperature"] == pytest.approx(0.01, rel=1e-6)
        expected = losses.simclr(u, v, temperature=float(loss.logit_scale.detach().neg().exp()))
    assert float(loss.logit_scale.detach()) == pytest.approx(math.log(100.0), rel=1e-7)
    torch.testing.assert_close(value, expected)


def test_a_learnable_temperature_below_the_clamp_is_refused():
    with pytest.raises(ValueError, match=r"temperature must give a scale of at most 100"):
        losses.SimCLR(temperature=0.005, learnable=True)
    with pytest.raises(ValueError, match=r"scale must give a scale of at most 100"):
        losses.SigLIP(scale=150.0, learnable=True)


def test_a_user_tensor_is_used_as_is_and_not_registered():
    t = torch.nn.Parameter(torch.tensor(0.2))
    loss = losses.SimCLR(temperature=t)
    assert list(loss.parameters()) == []
    assert loss.learned() == {}
    u, v = random_views(6, 3, seed=12, dtype=torch.float32)
    loss(u, v).backward()
    assert t.grad is not None and float(t.grad) != 0
    with torch.no_grad():
        t.fill_(0.5)
    assert loss.temperature == 0.5
    assert "temperature=0.5 (tensor)" in repr(loss)


def test_fixed_settings_stay_plain_floats_without_parameters():
    for loss in (losses.SimCLR(0.2), losses.SigLIP(), losses.HCL(), losses.SupCon()):
        assert list(loss.parameters()) == []
        assert all(isinstance(value, float) for value in loss.settings().values())
    assert losses.SimCLR(0.2).settings() == {"temperature": 0.2}
    assert repr(losses.SigLIP(5.0, -2.0)) == "SigLIP(scale=5, bias=-2)"


def test_learned_settings_of_a_sum_of_losses():
    objective = losses.SimCLR(learnable=True) + 3 * losses.VRNS(n=10)
    assert learned_settings(objective) == pytest.approx({"temperature": 0.07}, rel=1e-6)
    assert learned_settings(losses.SimCLR()) == {}


def test_settings_show_the_value_after_an_optimizer_step():
    loss = losses.SimCLR(learnable=True)
    u, v = random_views(8, 4, seed=13, dtype=torch.float32)
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
    loss(u, v).backward()
    optimizer.step()
    assert loss.settings()["temperature"] == pytest.approx(
        math.exp(-float(loss.logit_scale.detach())), rel=1e-6)
    assert loss.settings()["temperature"] != pytest.approx(0.07, rel=1e-6)


BAD_TENSORS = [
    (torch.tensor([0.1, 0.2]), r"temperature must be a number or a 0-d tensor, got a tensor "
                               r"of shape \(2,\)"),
    (torch.tensor(1), r"temperature must be a floating-point tensor, got dtype torch.int64"),
    (torch.tensor(float("nan")), r"temperature must be finite, got nan"),
    (torch.tensor(float("inf")), r"temperature must be finite, got inf"),
    (torch.tensor(-0.1), r"temperature must be > 0, got -0.1"),
    (torch.tensor(0.0), r"temperature must be > 0, got 0.0"),
]


@pytest.mark.parametrize(("value", "message"), BAD_TENSORS)
def test_bad_tensor_temperatures_raise(value, message):
    u, v = random_views(4, 3, seed=14)
    for call in (lambda: losses.simclr(u, v, value), lambda: losses.SimCLR(value),
                 lambda: losses.supcon(u, v, LABELS[:4], value),
                 lambda: losses.hcl(u, v, value), lambda: losses.SupCon(value)):
        with pytest.raises(ValueError, match=message):
            call()


def test_bad_siglip_tensors_raise_naming_the_setting():
    u, v = random_views(4, 3, seed=15)
    with pytest.raises(ValueError, match=r"scale must be > 0, got -1.0"):
        losses.siglip(u, v, torch.tensor(-1.0))
    with pytest.raises(ValueError, match=r"bias must be finite, got nan"):
        losses.siglip(u, v, bias=torch.tensor(float("nan")))
    with pytest.raises(ValueError, match=r"bias must be a number or a 0-d tensor"):
        losses.SigLIP(bias=torch.zeros(1, 1))


def test_learnable_with_a_tensor_is_refused():
    with pytest.raises(ValueError, match=r"temperature: with learnable=True pass the initial "
                                         r"value as a number"):
        losses.SimCLR(torch.tensor(0.1), learnable=True)
