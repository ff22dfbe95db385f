"""Loss modules add and scale, and a composed loss reports its parts."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import losses
from tests.conftest import random_views


def test_sum_and_scale_equal_the_weighted_functions():
    u, v = random_views(8, 6, seed=1)
    composed = losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=50_000)
    expected = losses.simclr(u, v, 0.2) + 30 * losses.vrns(u, v, n=50_000)
    assert float(composed(u, v)) == pytest.approx(float(expected), rel=1e-12)


def test_compute_reports_unweighted_parts_and_weights():
    u, v = random_views(8, 6, seed=2)
    composed = losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=1000)
    out = composed.compute(u, v)
    assert list(out.parts) == ["simclr", "vrns"]
    assert out.weights == {"simclr": 1.0, "vrns": 30.0}
    assert float(out.parts["vrns"]) == pytest.approx(float(losses.vrns(u, v, n=1000)))
    assert float(out.total) == pytest.approx(
        float(out.parts["simclr"] + 30 * out.parts["vrns"]), rel=1e-12
    )
    floats = out.as_floats()
    assert set(floats) == {"loss", "simclr", "vrns"}
    assert all(isinstance(x, float) for x in floats.values())


def test_plain_module_compute_has_one_part():
    u, v = random_views(5, 3, seed=3)
    out = losses.DCL().compute(u, v)
    assert list(out.parts) == ["dcl"] and float(out.total) == float(losses.dcl(u, v))


def test_scaling_distributes_and_names_stay_unique():
    u, v = random_views(6, 4, seed=4)
    composed = 2 * (losses.InfoNCE(0.1) + losses.InfoNCE(0.5)) * 0.5 + losses.Spectral()
    out = composed.compute(u, v)
    assert list(out.parts) == ["info_nce", "info_nce_2", "spectral"]
    assert out.weights == {"info_nce": 1.0, "info_nce_2": 1.0, "spectral": 1.0}
    expected = losses.info_nce(u, v, 0.1) + losses.info_nce(u, v, 0.5) + losses.spectral(u, v)
    assert float(out.total) == pytest.approx(float(expected), rel=1e-12)


def test_composite_backpropagates_into_both_terms():
    u, v = random_views(6, 4, seed=5)
    u.requires_grad_(True)
    (losses.DHEL() + 10 * losses.VRNS(n=100))(u, v).backward()
    assert u.grad is not None and torch.isfinite(u.grad).all()


def test_composite_is_an_nn_module_holding_its_terms():
    composed = losses.SimCLR() + 30 * losses.VRNS(n=100)
    assert isinstance(composed, torch.nn.Module)
    assert len(list(composed.children())[0]) == 2
    assert "1 * simclr + 30 * vrns" in repr(composed)


@pytest.mark.parametrize("weight", [math.nan, math.inf])
def test_non_finite_weight_raises(weight):
    with pytest.raises(ValueError, match="weight"):
        weight * losses.SimCLR()


def test_adding_a_non_loss_is_a_type_error():
    with pytest.raises(TypeError):
        losses.SimCLR() + 1.0
    with pytest.raises(TypeError):
        losses.SimCLR() * "2"
