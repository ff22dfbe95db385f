"""Bad input raises ValueError naming the argument; a loss never returns a silent NaN."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import losses

GOOD = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))

ALL = {
    "info_nce": losses.info_nce,
    "simclr": losses.simclr,
    "dcl": losses.dcl,
    "dhel": losses.dhel,
    "siglip": losses.siglip,
    "spectral": losses.spectral,
    "vrns": lambda u, v: losses.vrns(u, v, n=100),
    "info_sym": lambda u, v: losses.info_sym(u, v, torch.exp, torch.log1p, 1, 0),
    "ind_add": lambda u, v: losses.ind_add(u, v, lambda x: x, torch.square, 1, 0, n=100),
}


def _with(value, row=1, col=2):
    x = GOOD.clone()
    x[row, col] = value
    return x


BAD_VIEWS = [
    ("shape mismatch", GOOD, torch.randn(5, 3), "same shape"),
    ("dim mismatch", GOOD, torch.randn(4, 2), "same shape"),
    ("1-D u", GOOD[0], GOOD[0], "u must be 2-D"),
    ("3-D v", GOOD, GOOD[None], "v must be 2-D"),
    ("batch of one", GOOD[:1], GOOD[:1], "batch of at least 2"),
    ("NaN in u", _with(math.nan), GOOD, "u contains NaN or Inf"),
    ("Inf in v", GOOD, _with(math.inf), "v contains NaN or Inf"),
    ("integer u", GOOD.long(), GOOD, "u must be a floating-point"),
    ("not a tensor", GOOD.tolist(), GOOD, "u must be a torch.Tensor"),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("case,u,v,message", BAD_VIEWS, ids=[c[0] for c in BAD_VIEWS])
def test_bad_views_raise_value_error(name, case, u, v, message):
    with pytest.raises(ValueError, match=message):
        ALL[name](u, v)


TEMPERATURE_LOSSES = [losses.info_nce, losses.simclr, losses.dcl, losses.dhel]
TEMPERATURE_MODULES = [losses.InfoNCE, losses.SimCLR, losses.DCL, losses.DHEL]


@pytest.mark.parametrize("loss", TEMPERATURE_LOSSES)
@pytest.mark.parametrize("temperature", [0.0, -0.1, math.nan, math.inf, "0.1", True])
def test_temperature_must_be_positive(loss, temperature):
    with pytest.raises(ValueError, match="temperature"):
        loss(GOOD, GOOD, temperature=temperature)


@pytest.mark.parametrize("module", TEMPERATURE_MODULES)
def test_modules_validate_at_construction(module):
    with pytest.raises(ValueError, match="temperature"):
        module(temperature=0.0)


@pytest.mark.parametrize("scale", [0.0, -1.0, math.nan])
def test_siglip_scale_must_be_positive(scale):
    with pytest.raises(ValueError, match="scale"):
        losses.siglip(GOOD, GOOD, scale=scale)
    with pytest.raises(ValueError, match="scale"):
        losses.SigLIP(scale=scale)


def test_siglip_bias_must_be_finite():
    with pytest.raises(ValueError, match="bias"):
        losses.siglip(GOOD, GOOD, bias=math.inf)


@pytest.mark.parametrize("n", [1, 0, -5, 2.5, "100", None])
def test_dataset_size_must_be_an_integer_of_at_least_two(n):
    with pytest.raises(ValueError, match=r"n \(the dataset size\)"):
        losses.vrns(GOOD, GOOD, n=n)
    with pytest.raises(ValueError, match=r"n \(the dataset size\)"):
        losses.ind_add(GOOD, GOOD, lambda x: x, torch.square, 1, 0, n=n)
    with pytest.raises(ValueError, match=r"n \(the dataset size\)"):
        losses.VRNS(n=n)


def test_dataset_size_must_cover_the_batch():
    with pytest.raises(ValueError, match="at least the batch size 4"):
        losses.vrns(GOOD, GOOD, n=3)


@pytest.mark.parametrize("c1,c2", [(0, 0), (2, 1), (1, -1), (0.5, 0.5)])
def test_c1_c2_must_select_negatives(c1, c2):
    with pytest.raises(ValueError, match=r"\(c1, c2\)"):
        losses.info_sym(GOOD, GOOD, torch.exp, torch.log1p, c1, c2)
    with pytest.raises(ValueError, match=r"\(c1, c2\)"):
        losses.ind_add(GOOD, GOOD, lambda x: x, torch.square, c1, c2, n=10)
    with pytest.raises(ValueError, match=r"\(c1, c2\)"):
        losses.InfoSym(torch.exp, torch.log1p, c1, c2)


def test_zero_rows_give_finite_losses_not_nan():
    u = GOOD.clone()
    u[0] = 0.0
    for name, loss in ALL.items():
        assert torch.isfinite(loss(u, GOOD)), name


MIXED_DTYPE_LOSSES = {
    "spectral": losses.spectral,
    "Spectral": losses.Spectral(),
    "polarization cross": lambda u, v: losses.polarization(u, v, views="cross"),
    "Polarization all": losses.Polarization(views="all"),
    "siglip": losses.siglip,
    "info_nce": losses.info_nce,
}


@pytest.mark.parametrize("name", MIXED_DTYPE_LOSSES)
@pytest.mark.parametrize("wide", ["u", "v"])
def test_mixed_float32_float64_views_promote_to_float64(name, wide):
    """Every loss treats a float32 view with a float64 one as torch promotes: both in float64,
    the value (and its gradients) those of the float64 pair."""
    loss = MIXED_DTYPE_LOSSES[name]
    generator = torch.Generator().manual_seed(0)
    u, v = (torch.randn(6, 4, generator=generator, dtype=torch.float64) for _ in range(2))
    narrowed = {"u": u, "v": v}
    narrow = "v" if wide == "u" else "u"
    narrowed[narrow] = narrowed[narrow].float().requires_grad_()
    value = loss(narrowed["u"], narrowed["v"])
    expected = loss(*(x.detach().float().double() if key == narrow else x
                      for key, x in (("u", u), ("v", v))))
    assert value.dtype == torch.float64
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
    (grad,) = torch.autograd.grad(value, narrowed[narrow])
    assert grad.dtype == torch.float32 and bool(torch.isfinite(grad).all())
