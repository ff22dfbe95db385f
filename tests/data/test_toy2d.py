"""The toy sets of LMCL's toy experiment: seeded, centred, of the documented shapes."""

from __future__ import annotations

import pytest
import torch

from contrastkit.data.toy2d import nested_moons, three_bars, toy_set


def test_three_bars_are_three_vertical_bars_at_the_spacing():
    x, y = three_bars(200, length=3.0, spacing=1.0, noise=0.05, seed=3)
    assert x.dtype == torch.float64 and y.bincount().tolist() == [200, 200, 200]
    for label in range(3):
        bar = x[y == label]
        assert abs(float(bar[:, 0].mean()) - (label - 1)) < 0.02
        assert float(bar[:, 1].abs().max()) <= 1.5
        assert float(bar[:, 1].std()) > 10 * float(bar[:, 0].std())


def _circle_centre(points: torch.Tensor) -> torch.Tensor:
    """The centre ``c`` of the circle through ``points`` (least squares on ``|p|^2 - 2 p.c =
    r^2 - |c|^2``)."""
    system = torch.cat([2 * points, torch.ones(len(points), 1, dtype=points.dtype)], dim=1)
    solution = torch.linalg.lstsq(system, (points ** 2).sum(1, keepdim=True)).solution
    return solution[:2, 0]


def test_nested_moons_are_two_unit_half_circles_shifted_by_one_and_a_half_then_centred():
    x, y = nested_moons(300, noise=0.0, seed=4)
    assert torch.allclose(x.mean(0), torch.zeros(2, dtype=torch.float64), atol=1e-12)
    outer, inner = _circle_centre(x[y == 0]), _circle_centre(x[y == 1])
    assert torch.allclose(inner - outer, torch.tensor([1.0, 0.5], dtype=torch.float64),
                          atol=1e-9)
    assert torch.allclose((x[y == 0] - outer).norm(dim=1), torch.ones(300, dtype=torch.float64))
    assert bool(((x[y == 0] - outer)[:, 1] >= -1e-12).all())  # the upper half circle
    assert bool(((x[y == 1] - inner)[:, 1] <= 1e-12).all())  # the lower one


def test_the_same_seed_draws_the_same_set_and_another_seed_another():
    a, la = toy_set("three_bars", seed=1)
    b, lb = toy_set("three_bars", seed=1)
    c, _ = toy_set("three_bars", seed=2)
    assert torch.equal(a, b) and torch.equal(la, lb) and not torch.equal(a, c)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="dataset must be one of three_bars, nested_moons"):
        toy_set("spirals")
    with pytest.raises(ValueError, match="n_per_class"):
        three_bars(0)
    with pytest.raises(ValueError, match="noise"):
        nested_moons(10, noise=-1.0)
