"""grad_cache with an encoder whose output shape is not the same for every chunk, or not the same
in the no-grad pass and the recompute pass: a ValueError naming the chunk, the shapes and what
grad caching needs, not torch's shape error from torch.cat or backward."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit import losses
from contrastkit.train.grad_cache import grad_cache

BATCH, IN_DIM, CHUNK = 8, 3, 3  # chunks of rows 0-2, 3-5, 6-7


class Changing(nn.Module):
    """A linear map whose output keeps ``dims[k]`` columns at its ``k``-th call (the last one
    after that)."""

    def __init__(self, dims):
        super().__init__()
        self.linear = nn.Linear(IN_DIM, max(dims))
        self.dims, self.calls = list(dims), 0

    def forward(self, x):
        dim = self.dims[min(self.calls, len(self.dims) - 1)]
        self.calls += 1
        return self.linear(x)[:, :dim]


def _views():
    generator = torch.Generator().manual_seed(0)
    return torch.randn(2, BATCH, IN_DIM, generator=generator).unbind(0)


def _run(dims):
    encoder = Changing(dims)
    return grad_cache(encoder, losses.SimCLR(temperature=0.5), *_views(), CHUNK), encoder


def test_a_chunk_of_another_dimension_in_the_first_pass_is_named():
    with pytest.raises(ValueError) as error:
        _run([4, 4, 5])
    message = str(error.value)
    assert "chunk 2 of view1 (rows 6-7) embeddings of shape (2, 5)" in message
    assert "chunk 0 of view1 (rows 0-2) of shape (3, 4)" in message
    assert "same embedding dimension for every chunk" in message


def test_the_second_view_s_chunks_are_checked_against_the_first_s():
    with pytest.raises(ValueError, match=r"chunk 0 of view2 \(rows 0-2\) embeddings of shape "
                                         r"\(3, 6\), but chunk 0 of view1 \(rows 0-2\) of "
                                         r"shape \(3, 4\)"):
        _run([4, 4, 4, 6])


def test_a_recompute_pass_of_another_shape_is_named():
    # six chunks in the first pass at dim 4, then the recompute pass at dim 5
    with pytest.raises(ValueError) as error:
        _run([4] * 6 + [5])
    message = str(error.value)
    assert ("chunk 0 of view1 (rows 0-2) embeddings of shape (3, 5) in the recompute pass "
            "(with autograd), but (3, 4) in the first pass (without)") in message
    assert "the encoder must be deterministic in shape" in message


def test_a_change_in_the_last_recomputed_chunk_is_named_too():
    with pytest.raises(ValueError, match=r"chunk 2 of view2 \(rows 6-7\) embeddings of shape "
                                         r"\(2, 3\) in the recompute pass"):
        _run([4] * 11 + [3])


def test_an_encoder_of_one_shape_still_trains():
    output, encoder = _run([4])
    assert torch.isfinite(output.total)
    assert encoder.calls == 12
    assert encoder.linear.weight.grad is not None
