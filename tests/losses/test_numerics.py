"""Finite values and gradients in the hard regimes: temperature 0.01 with cosines at +-1, and
half-precision autocast; VRNS keeps its 1/(n-1) offset under autocast."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from tests.conftest import random_views

LOW_TEMPERATURE = {
    "info_nce": lambda u, v: losses.info_nce(u, v, temperature=0.01),
    "simclr": lambda u, v: losses.simclr(u, v, temperature=0.01),
    "dcl": lambda u, v: losses.dcl(u, v, temperature=0.01),
    "dhel": lambda u, v: losses.dhel(u, v, temperature=0.01),
    "siglip": lambda u, v: losses.siglip(u, v, scale=100.0, bias=-100.0),
    "spectral": losses.spectral,
    "vrns": lambda u, v: losses.vrns(u, v, n=50_000),
}


def _extreme_views(dtype):
    """Positives aligned (cos 1), negatives at cos -1, 0 and 1 (duplicated rows)."""
    e1, e2 = torch.tensor([1.0, 0.0], dtype=dtype), torch.tensor([0.0, 1.0], dtype=dtype)
    u = torch.stack([e1, -e1, e2, -e2, e1])
    return u.clone(), u.clone()


@pytest.mark.parametrize("name", LOW_TEMPERATURE)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_finite_at_temperature_0_01_with_cosines_at_plus_minus_one(name, dtype):
    u, v = _extreme_views(dtype)
    u.requires_grad_(True)
    v.requires_grad_(True)
    value = LOW_TEMPERATURE[name](u, v)
    value.backward()
    assert torch.isfinite(value)
    assert torch.isfinite(u.grad).all() and torch.isfinite(v.grad).all()


@pytest.mark.parametrize("name", LOW_TEMPERATURE)
def test_float32_agrees_with_float64_at_temperature_0_01(name):
    u, v = random_views(64, 16, seed=4)
    exact = float(LOW_TEMPERATURE[name](u, v))
    single = float(LOW_TEMPERATURE[name](u.float(), v.float()))
    assert single == pytest.approx(exact, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("name", LOW_TEMPERATURE)
@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_finite_and_close_under_half_precision_autocast(name, half):
    u, v = random_views(32, 16, seed=6, dtype=torch.float32)
    u.requires_grad_(True)
    reference = float(LOW_TEMPERATURE[name](u.detach(), v))
    with torch.autocast(device_type="cpu", dtype=half):
        value = LOW_TEMPERATURE[name](u, v)
    value.backward()
    assert value.dtype in (torch.float32, torch.float64)
    assert torch.isfinite(value) and torch.isfinite(u.grad).all()
    # half precision carries ~3 significant digits into the logits s / 0.01
    assert float(value.detach()) == pytest.approx(reference, rel=0.05, abs=0.05)


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_vrns_keeps_its_offset_under_half_precision(half):
    """With n = 50 000 the offset 1/(n-1) = 2e-5 is below half precision's resolution near the
    similarities; VRNS must still apply it exactly (it computes in float32, autocast off)."""
    u, v = random_views(16, 8, seed=8, dtype=torch.float32)
    u, v = u + 2.0, v + 2.0  # negatives around cos 0.8, where half precision spacing is ~4e-3
    u_half, v_half = u.to(half), v.to(half)
    exact = {
        n: float(losses.vrns(u_half.double(), v_half.double(), n=n)) for n in (50_000, 10**12)
    }
    with torch.autocast(device_type="cpu", dtype=half):
        value = {n: float(losses.vrns(u_half, v_half, n=n)) for n in (50_000, 10**12)}
    offset_effect = exact[50_000] - exact[10**12]
    assert abs(offset_effect) > 1e-5  # the effect being checked is real
    assert value[50_000] - value[10**12] == pytest.approx(offset_effect, rel=1e-2)
    assert value[50_000] == pytest.approx(exact[50_000], rel=1e-6)


@pytest.mark.parametrize("name", ["info_nce", "simclr", "dcl", "dhel"])
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("half", [None, torch.bfloat16, torch.float16])
def test_chunked_at_temperature_0_01_agrees_with_float64(name, aligned, half):
    """The chunked kernels at t = 0.01, in float32 and under half-precision autocast, with
    aligned positives (v close to u) and unrelated views: one shift for SimCLR, DCL and DHEL
    either way, and for InfoNCE the general chunked path with unrelated views (its row maxima
    lie too far apart for one shift)."""
    u, v = random_views(24, 16, seed=7, dtype=torch.float32)
    if aligned:
        v = u + 0.05 * v
    exact = float(LOW_TEMPERATURE[name](u.double(), v.double()))
    u.requires_grad_(True)
    with torch.autocast(device_type="cpu", dtype=half or torch.bfloat16, enabled=half is not None):
        value = getattr(losses, name)(u, v, temperature=0.01, chunk_size=5)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(u.grad).all()
    tolerance = 1e-4 if half is None else 0.05  # half precision: ~3 digits of s / 0.01
    assert float(value.detach()) == pytest.approx(exact, rel=tolerance, abs=tolerance)
