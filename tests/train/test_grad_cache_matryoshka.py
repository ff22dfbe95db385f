"""Gradient caching of a Matryoshka loss (``losses.Matryoshka``): the encoder (and a learned
temperature) receive the gradient of the whole batch's loss over every prefix, with explicit
negatives and InfoNCE's one-way form, on every kernel path."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit import losses
from contrastkit.losses.kernels import common
from contrastkit.train.grad_cache import grad_cache

BATCH, IN_DIM, DIM, CHUNK, K, POOL = 8, 5, 6, 3, 2, 6
DIMS, WEIGHTS = (2, 4, 6), (1.0, 0.5, 2.0)
CRITERIA = {
    "info_nce": lambda **kw: losses.InfoNCE(0.3, **kw),
    "info_nce_one_way": lambda **kw: losses.InfoNCE(0.3, direction="one_way", **kw),
    "info_nce_learned": lambda **kw: losses.InfoNCE(0.3, learnable=True, **kw),
    "siglip": lambda **kw: losses.SigLIP(5.0, -2.0, **kw),
}


def _encoder() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN_DIM, 8), nn.Tanh(), nn.Linear(8, DIM)).double()


def _inputs(form: str):
    """Two views ``(BATCH, IN_DIM)`` and the negatives' inputs: each row's own
    ``(BATCH, K, IN_DIM)``, a pool ``(POOL, IN_DIM)`` or none."""
    generator = torch.Generator().manual_seed(1)
    view1, view2 = torch.randn(2, BATCH, IN_DIM, generator=generator, dtype=torch.float64)
    shape = {"own": (BATCH, K, IN_DIM), "pool": (POOL, IN_DIM)}.get(form)
    negatives = None if shape is None else torch.randn(shape, generator=generator,
                                                       dtype=torch.float64)
    return view1, view2, negatives


def _gradients(encoder, criterion):
    return [p.grad.clone() for p in (*encoder.parameters(), *criterion.parameters())]


@pytest.mark.parametrize("path", ["small", "kernel", "chunked"])
@pytest.mark.parametrize("form", ["own", "pool", "none"])
@pytest.mark.parametrize("name", CRITERIA)
def test_the_cached_gradient_is_the_whole_batchs(name, form, path, monkeypatch):
    """On the plain-autograd small path, the fused kernels and the chunked ones."""
    if path == "kernel":
        monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
    view1, view2, negatives = _inputs(form)
    encoder = _encoder()
    chunk_size = 2 if path == "chunked" else None
    criterion = losses.Matryoshka(CRITERIA[name](chunk_size=chunk_size), DIMS, WEIGHTS)
    extra = {} if negatives is None else {"negatives": encoder(negatives)}
    expected = criterion.compute(encoder(view1), encoder(view2), None, **extra)
    expected.total.backward()
    wanted = _gradients(encoder, criterion)
    encoder.zero_grad()
    criterion.zero_grad()
    got = grad_cache(encoder, criterion, view1, view2, CHUNK, negatives=negatives)
    torch.testing.assert_close(got.total, expected.total.detach(), rtol=1e-12, atol=0)
    assert list(got.parts) == list(expected.parts)
    for want, have in zip(wanted, _gradients(encoder, criterion), strict=True):
        torch.testing.assert_close(have, want, rtol=1e-10, atol=1e-12)
