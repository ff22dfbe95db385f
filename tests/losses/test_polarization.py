"""LMCL's distance-polarization regularizer (Chen et al. 2021): loop reference, Theorem 2's
one-hot embedding, the Eq. (5) ceiling, the shape of the penalty, gradients, bad input."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from tests.losses._reference_family import polarization_reference


def views(seed, batch=7, dim=4, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, dim, generator=g, dtype=dtype),
            torch.randn(batch, dim, generator=g, dtype=dtype))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("view_set", ["within", "cross", "all"])
@pytest.mark.parametrize("band", [(0.1, 0.5), (0.2, 0.9), (0.0, 1.0)])
def test_matches_loop_reference(seed, reduction, view_set, band):
    u, v = views(seed)
    got = losses.polarization(u, v, *band, reduction=reduction, views=view_set)
    expected = polarization_reference(u, v, *band, reduction, view_set)
    assert expected > 0  # random embeddings have pairs inside the band
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_pair_distances_eq3():
    u, _ = views(1)
    z = torch.nn.functional.normalize(u, dim=1)
    d = losses.pair_distances(z)
    assert torch.allclose(d, d.T) and torch.allclose(d.diagonal(), torch.zeros(7, dtype=d.dtype))
    squared = (z.unsqueeze(1) - z.unsqueeze(0)).square().sum(-1)
    assert torch.allclose(d, squared / 4)
    e = torch.eye(2, dtype=torch.float64)
    assert losses.pair_distances(e, -e).tolist() == [[1.0, 0.5], [0.5, 1.0]]


@pytest.mark.parametrize("band", [(0.1, 0.5), (0.0, 0.5), (0.3, 0.4)])
@pytest.mark.parametrize("view_set", ["within", "cross", "all"])
def test_theorem2_one_hot_class_embedding_has_zero_regularizer(band, view_set):
    """Theorem 2: phi(x_i) = e_{y_i} puts intra-class pairs at D = 0 and inter-class pairs at
    D = 1/2, outside any band with delta_minus <= 1/2, so R_1 = 0."""
    labels = torch.tensor([0, 1, 2, 0, 1, 3, 3, 2])
    one_hot = torch.nn.functional.one_hot(labels, num_classes=5).double()
    for reduction in ("mean", "sum"):
        value = losses.polarization(one_hot, one_hot, *band, reduction=reduction,
                                    views=view_set)
        assert value.item() == 0.0
    # a slightly perturbed embedding is penalized: the test can fail
    noisy = one_hot + 0.3 * views(2, batch=8, dim=5)[0]
    assert losses.polarization(noisy, noisy, 0.1, 0.5, views=view_set).item() > 0


@pytest.mark.parametrize("n", [2, 3, 5, 10, 40])
def test_eq5_mean_distance_never_exceeds_ceiling(n):
    """Eq. (5) / footnote 1: mean_{i<j} D_ij <= N / (2N - 2) for unit vectors."""
    ceiling = n / (2 * n - 2)
    upper = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    for seed in range(50):
        g = torch.Generator().manual_seed(seed)
        dim = 1 + seed % 6
        z = torch.nn.functional.normalize(
            torch.randn(n, dim, generator=g, dtype=torch.float64), dim=1)
        assert losses.pair_distances(z)[upper].mean().item() <= ceiling + 1e-12


def test_eq5_ceiling_reached_iff_the_embeddings_sum_to_zero():
    antipodal = torch.cat([torch.eye(3), -torch.eye(3)]).double()  # N = 6, sum 0
    upper = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert losses.pair_distances(antipodal)[upper].mean().item() == pytest.approx(0.6, abs=1e-15)
    shifted = torch.nn.functional.normalize(antipodal + 0.1, dim=1)
    assert losses.pair_distances(shifted)[upper].mean().item() < 0.6 - 1e-3


def test_penalty_shape_footnote3():
    """h is 0 outside the band and at its ends, peaks at tau^2/4 at the midpoint, and a
    gradient step pulls pairs below the midpoint together and pushes those above apart."""

    def pair_at(distance):
        cos = 1 - 2 * distance
        a = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
        b = torch.tensor([[cos, (1 - cos**2) ** 0.5]], dtype=torch.float64)
        return torch.cat([a, b])

    def value(distance):
        z = pair_at(distance)
        return losses.polarization(z, z, 0.1, 0.5, reduction="sum", views="within").item() / 2

    assert value(0.05) == 0.0 and value(0.1) == 0.0 and value(0.5) == 0.0 and value(0.8) == 0.0
    assert value(0.3) == pytest.approx(0.4**2 / 4, rel=1e-12)
    assert value(0.2) < value(0.3) and value(0.45) < value(0.3)
    for start, direction in ((0.2, -1), (0.4, +1)):
        z = pair_at(start).requires_grad_(True)
        losses.polarization(z, z, 0.1, 0.5, reduction="sum").backward()
        with torch.no_grad():
            stepped = torch.nn.functional.normalize(z - 0.1 * z.grad, dim=1)
        moved = losses.pair_distances(stepped)[0, 1].item() - start
        assert moved * direction > 0


def test_sum_counts_unordered_pairs_once():
    u, v = views(3, batch=5)
    mean = losses.polarization(u, v, reduction="mean", views="within")
    total = losses.polarization(u, v, reduction="sum", views="within")
    assert total.item() == pytest.approx(mean.item() * 2 * (5 * 4 / 2), rel=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reduced_in_float32_under_float16_autocast(reduction):
    """1 300 rows whose every within-view pair sits at the band's midpoint (cos 0.4, D = 0.3,
    h = 0.04): the sum, 0.04 x 1 300 x 1 299 = 67 548, is beyond float16's 65 504; it is
    reduced in float32, finite and exact to float16's rounding of the products."""
    batch = 1300
    rows = torch.cat([torch.full((batch, 1), 0.4 ** 0.5), 0.6 ** 0.5 * torch.eye(batch)], 1)
    plain = losses.polarization(rows, rows, reduction=reduction)
    with torch.autocast("cpu", dtype=torch.float16):
        mixed = losses.polarization(rows, rows, reduction=reduction)
    expected = 0.04 * (batch * (batch - 1) if reduction == "sum" else 1)
    assert plain.item() == pytest.approx(expected, rel=1e-4)
    assert mixed.dtype == torch.float32 and bool(torch.isfinite(mixed))
    assert mixed.item() == pytest.approx(expected, rel=1e-2)


def test_gradcheck():
    u, v = views(4, batch=5, dim=3)
    u.requires_grad_(True)
    v.requires_grad_(True)
    fn = lambda a, b: losses.polarization(a, b, 0.1, 0.5, views="all")  # noqa: E731
    assert torch.autograd.gradcheck(fn, (u, v))


def test_module_composes_as_eq9():
    u, v = views(5)
    module = losses.Polarization(delta_plus=0.1, delta_minus=0.5, reduction="sum")
    assert module.name == "polarization"
    assert module(u, v).item() == losses.polarization(u, v, reduction="sum").item()
    lmcl = losses.InfoNCE(temperature=1.0) + 0.1 * module
    out = lmcl.compute(u, v)
    expected = losses.info_nce(u, v, 1.0) + 0.1 * losses.polarization(u, v, reduction="sum")
    assert out.total.item() == pytest.approx(expected.item(), rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"delta_plus": 0.5, "delta_minus": 0.5}, "delta_plus"),
        ({"delta_plus": 0.6, "delta_minus": 0.5}, "delta_plus"),
        ({"delta_plus": -0.1, "delta_minus": 0.5}, "delta_plus"),
        ({"delta_plus": 0.1, "delta_minus": 1.5}, "delta_minus"),
        ({"delta_plus": float("nan")}, "delta_plus"),
        ({"reduction": "none"}, "reduction"),
        ({"views": "u"}, "views"),
    ],
)
def test_bad_options(kwargs, name):
    u, v = views(6)
    with pytest.raises(ValueError, match=name):
        losses.polarization(u, v, **kwargs)
    with pytest.raises(ValueError, match=name):
        losses.Polarization(**kwargs)
