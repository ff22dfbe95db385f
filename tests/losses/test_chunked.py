"""chunk_size: the same value and gradients as the unchunked loss, forward and backward."""

from __future__ import annotations

import pytest
import torch

from ._fast_reference import ALL_LOSSES, fast, value_and_grads, views

# 1 row per block, uneven last blocks, exactly the batch, more than the batch
CHUNKS = [1, 3, 7, 13, 40]


@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("name", ALL_LOSSES)
def test_chunked_equals_unchunked_float64(name, chunk_size):
    u, v = views(13, 5, seed=20)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b), u, v)
    chunked, chunked_grads = value_and_grads(
        lambda a, b: fast(name, a, b, chunk_size=chunk_size), u, v
    )
    torch.testing.assert_close(chunked, value, rtol=1e-13, atol=1e-13)
    for grad, chunked_grad in zip(grads, chunked_grads, strict=True):
        torch.testing.assert_close(chunked_grad, grad, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_chunked_equals_unchunked_float32(name):
    u, v = views(50, 16, seed=21, dtype=torch.float32)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b), u, v)
    chunked, chunked_grads = value_and_grads(lambda a, b: fast(name, a, b, chunk_size=8), u, v)
    torch.testing.assert_close(chunked, value, rtol=1e-6, atol=1e-6)
    for grad, chunked_grad in zip(grads, chunked_grads, strict=True):
        torch.testing.assert_close(chunked_grad, grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["simclr", "info_nce", "siglip", "supcon"])
def test_chunked_gradient_reaches_upstream_parameters(name):
    """Backward through a layer below the chunked loss: the layer's gradient is unchanged."""
    generator = torch.Generator().manual_seed(22)
    layer = torch.nn.Linear(6, 4).double()
    x, y = torch.randn(2, 11, 6, generator=generator, dtype=torch.float64)
    grads = []
    for chunk_size in (None, 4):
        layer.zero_grad()
        fast(name, layer(x), layer(y), chunk_size=chunk_size).backward()
        grads.append(layer.weight.grad.clone())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-13)


def test_siglip_forms_each_block_once_and_differentiates_only_when_asked(monkeypatch):
    """SigLIP's kernel applies each block's derivative in its forward (a sum of functions of
    single entries needs no normalizer): with chunk_size every block of the matrix is formed
    once over forward and backward, not again in the backward, and under torch.no_grad() no
    gradient product runs."""
    from contrastkit.losses.kernels.common import Operands

    calls = {"products": 0, "grads": 0}

    def counted(method):
        original = getattr(Operands, method)

        def wrapper(*args, **kwargs):
            calls[method] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(Operands, method, wrapper)

    for method in calls:
        counted(method)
    u, v = views(13, 5, seed=23)
    value, _ = value_and_grads(lambda a, b: fast("siglip", a, b, chunk_size=4), u, v)
    assert calls == {"products": 4, "grads": 4}  # blocks of 4, 4, 4 and 1 rows
    calls.update(products=0, grads=0)
    with torch.no_grad():
        assert fast("siglip", u, v, chunk_size=4) == value
    assert calls == {"products": 4, "grads": 0}
