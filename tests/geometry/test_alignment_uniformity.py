"""alignment, uniformity and the paper's eq. (4) / eq. (5)."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import geometry


def unit_rows(batch, dim, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, dim, generator=generator, dtype=torch.float64)
    return x / x.norm(dim=1, keepdim=True)


def test_alignment_alpha_2_is_eq_4():
    u, v = unit_rows(20, 5, 0), unit_rows(20, 5, 1)
    stats = geometry.similarity_stats(u, v)
    assert geometry.alignment(u, v) == pytest.approx(2 - 2 * stats.positive_mean, abs=1e-12)


@pytest.mark.parametrize("alpha", [0.5, 1, 3])
def test_alignment_equals_loop(alpha):
    u, v = unit_rows(9, 4, 2), unit_rows(9, 4, 3)
    expected = sum(float((u[i] - v[i]).norm()) ** alpha for i in range(9)) / 9
    assert geometry.alignment(u, v, alpha=alpha) == pytest.approx(expected, abs=1e-12)


def loop_uniformity(x, t, y=None):
    values = []
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if (y is None and j > i) or (y is not None and j != i):
                other = x[j] if y is None else y[j]
                values.append(math.exp(-t * float((x[i] - other).square().sum())))
    return math.log(sum(values) / len(values))


@pytest.mark.parametrize("block_size", [1, 2, 5, 100])
@pytest.mark.parametrize("t", [1, 2, 5])
def test_uniformity_equals_loop(block_size, t):
    x = unit_rows(11, 3, 4)
    assert geometry.uniformity(x, t=t, block_size=block_size) == pytest.approx(
        loop_uniformity(x, t), abs=1e-12
    )


@pytest.mark.parametrize("block_size", [1, 3, 100])
def test_cross_view_uniformity_equals_loop(block_size):
    x, y = unit_rows(8, 3, 5), unit_rows(8, 3, 6)
    assert geometry.uniformity(x, t=1, y=y, block_size=block_size) == pytest.approx(
        loop_uniformity(x, 1, y), abs=1e-12
    )


def test_uniformity_of_antipodal_points():
    x = torch.tensor([[0.0, 2.0], [0.0, -3.0]])  # normalized: squared distance 4
    assert geometry.uniformity(x, t=2) == pytest.approx(-8.0, abs=1e-12)
    assert geometry.uniformity(x, t=2, normalize=False) == pytest.approx(-2 * 25.0, abs=1e-12)


def test_eq_5_on_gaussian_like_similarities():
    """High-dimensional random unit vectors: s_neg is nearly Gaussian, so eq. (5) is tight."""
    u, v = unit_rows(400, 64, 7), unit_rows(400, 64, 8)
    stats = geometry.similarity_stats(u, v)
    exact = geometry.uniformity(u, t=1, y=v)
    approx = geometry.uniformity_approximation(stats.negative_mean, stats.negative_var)
    assert approx == pytest.approx(exact, abs=2e-3)


def test_eq_5_is_only_an_approximation():
    """Similarities +-1 with equal weight (far from Gaussian): eq. (5) misses by a lot."""
    x = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    stats = geometry.similarity_stats(x, x)
    exact = geometry.uniformity(x, t=1, y=x)
    approx = geometry.uniformity_approximation(stats.negative_mean, stats.negative_var)
    assert abs(approx - exact) > 0.1  # 0.17, vs < 2e-3 in the Gaussian-like case


@pytest.mark.parametrize("t", [0.5, 1, 2])
def test_uniformity_approximation_is_the_gaussian_log_mgf(t):
    # log E exp(-t (2 - 2 s)) for s ~ N(mu, sigma^2) is -2t + 2t mu + (2t)^2 sigma^2 / 2
    mean, var = -0.1, 0.05
    expected = -2 * t + 2 * t * mean + (2 * t) ** 2 * var / 2
    assert geometry.uniformity_approximation(mean, var, t=t) == pytest.approx(expected, abs=1e-15)
    assert geometry.uniformity_approximation(mean, var) == pytest.approx(2 * (mean + var - 1))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: geometry.alignment(x, x, alpha=0), "alpha"),
        (lambda x: geometry.alignment(x, x[:-1]), "same shape"),
        (lambda x: geometry.uniformity(x, t=-1), "t must"),
        (lambda x: geometry.uniformity(x[:1]), "at least 2"),
        (lambda x: geometry.uniformity(x, y=x[:-1]), "same shape"),
        (lambda x: geometry.uniformity(x.clone().fill_(math.nan)), "NaN"),
        (lambda x: geometry.uniformity(x, block_size=0), "block_size"),
        (lambda x: geometry.uniformity_approximation(0.0, -0.1), "negative_var"),
        (lambda x: geometry.uniformity_approximation(math.nan, 0.1), "negative_mean"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call(unit_rows(5, 3, 9))
