"""torch.autograd.gradcheck in float64 for every loss (through the row normalization)."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from tests.conftest import random_views

LOSSES = {
    "info_nce": lambda u, v: losses.info_nce(u, v, temperature=0.2),
    "simclr": lambda u, v: losses.simclr(u, v, temperature=0.2),
    "dcl": lambda u, v: losses.dcl(u, v, temperature=0.2),
    "dhel": lambda u, v: losses.dhel(u, v, temperature=0.2),
    "siglip": lambda u, v: losses.siglip(u, v, scale=5.0, bias=-2.0),
    "spectral": losses.spectral,
    "vrns": lambda u, v: losses.vrns(u, v, n=20),
    "vrns_within": lambda u, v: losses.vrns(u, v, n=20, within_view=True),
    "info_sym": lambda u, v: losses.info_sym(
        u, v, lambda x: torch.exp(x / 0.3), torch.log1p, 1, 1
    ),
    "ind_add": lambda u, v: losses.ind_add(
        u, v, lambda x: -torch.exp(-x), lambda x: torch.exp(x), 1, 1, n=10
    ),
    "composite": lambda u, v: (losses.SimCLR(0.2) + 3 * losses.VRNS(n=10))(u, v),
}


@pytest.mark.parametrize("name", LOSSES)
def test_gradcheck(name):
    u, v = random_views(5, 4, seed=3)
    u.requires_grad_(True)
    v.requires_grad_(True)
    assert torch.autograd.gradcheck(LOSSES[name], (u, v), eps=1e-6, atol=1e-7)
