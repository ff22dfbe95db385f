"""The linear 2 x 2 embedding of LMCL's toy experiment: seeded, its objective falls, the
regularizer at weight 0 is conventional CL, and the regularizer shrinks the margin band."""

from __future__ import annotations

import pytest
import torch

from contrastkit.data.toy2d import three_bars
from contrastkit.geometry import margin_fraction
from contrastkit.simulate.linear_embedding import train_linear_embedding


def test_the_objective_falls_and_a_seed_repeats_the_run():
    points, _ = three_bars(30, seed=0)
    run = train_linear_embedding(points, steps=300, lr=0.01, batch_size=32, seed=1)
    again = train_linear_embedding(points, steps=300, lr=0.01, batch_size=32, seed=1)
    assert torch.equal(run.matrix, again.matrix) and run.matrix.shape == (2, 2)
    first, last = sum(run.losses[:30]) / 30, sum(run.losses[-30:]) / 30
    assert last < first


def test_weight_zero_is_conventional_cl_and_the_regularizer_empties_the_band():
    points, _ = three_bars(30, seed=0)
    plain = train_linear_embedding(points, steps=200, lr=0.01, seed=2)
    zero = train_linear_embedding(points, steps=200, lr=0.01, polarization=0.0, seed=2)
    assert torch.equal(plain.matrix, zero.matrix)
    start = train_linear_embedding(points, steps=0, seed=2)
    polarized = train_linear_embedding(points, steps=400, lr=0.01, polarization=1.0,
                                       temperature=1.0, seed=2)
    assert margin_fraction(polarized.embed(points)) < margin_fraction(start.embed(points))


def test_the_embedding_is_unit_length():
    points, _ = three_bars(10, seed=0)
    run = train_linear_embedding(points, steps=5, seed=0)
    assert torch.allclose(run.embed(points).norm(dim=1), torch.ones(30, dtype=torch.float64))


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="points must be a finite"):
        train_linear_embedding(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="lr"):
        train_linear_embedding(torch.randn(5, 2), lr=0.0)
