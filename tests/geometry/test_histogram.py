"""similarity_histogram against numpy.histogram of all pairs; the plot."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contrastkit import geometry


def views(batch, dim, seed):
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator, dtype=torch.float64)
    return u, u + torch.randn(batch, dim, generator=generator, dtype=torch.float64)


def all_pair_values(u, v, labels):
    """Similarities of every kind of ordered pair, listed one by one."""
    u = (u / u.norm(dim=1, keepdim=True)).numpy()
    v = (v / v.norm(dim=1, keepdim=True)).numpy()
    kinds = {name: [] for name in ("positive", "negative", "within", "negative_same_class",
                                   "negative_different_class", "within_same_class",
                                   "within_different_class")}
    for i in range(len(u)):
        kinds["positive"].append(u[i] @ v[i])
        for j in range(len(u)):
            if i == j:
                continue
            side = "same" if labels[i] == labels[j] else "different"
            kinds["negative"].append(u[i] @ v[j])
            kinds[f"negative_{side}_class"].append(u[i] @ v[j])
            for x in (u, v):
                kinds["within"].append(x[i] @ x[j])
                kinds[f"within_{side}_class"].append(x[i] @ x[j])
    return kinds


@pytest.mark.parametrize("block_size", [1, 4, 100])
@pytest.mark.parametrize("scale", ["similarity", "distance"])
def test_counts_equal_numpy_histogram(block_size, scale):
    u, v = views(12, 3, seed=0)
    labels = torch.tensor([0, 1, 1, 2, 0, 0, 1, 2, 2, 2, 0, 1])
    histogram = geometry.similarity_histogram(u, v, labels, bins=17, scale=scale,
                                              block_size=block_size)
    low, high = (-1, 1) if scale == "similarity" else (0, 1)
    for kind, values in all_pair_values(u, v, labels.tolist()).items():
        values = np.asarray(values)
        if scale == "distance":
            values = (1 - values) / 2
        expected, edges = np.histogram(values, bins=17, range=(low, high))
        np.testing.assert_array_equal(histogram.counts[kind].numpy(), expected, err_msg=kind)
        np.testing.assert_allclose(histogram.edges.numpy(), edges, atol=1e-15)


def test_counts_match_similarity_stats_counts():
    u, v = views(30, 4, seed=1)
    histogram = geometry.similarity_histogram(u, v, block_size=7)
    stats = geometry.similarity_stats(u, v)
    for kind in ("positive", "negative", "within"):
        assert int(histogram.counts[kind].sum()) == getattr(stats, f"{kind}_count")
        assert float(histogram.density(kind).sum() * (2 / 50)) == pytest.approx(1.0)


def test_single_set_of_features():
    z, _ = views(9, 3, seed=2)
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    histogram = geometry.similarity_histogram(z, labels=labels, bins=8, block_size=2)
    assert set(histogram.counts) == {"within", "within_same_class", "within_different_class"}
    assert int(histogram.counts["within"].sum()) == 9 * 8
    assert int(histogram.counts["within_same_class"].sum()) == 3 * 3 * 2


def test_exact_similarities_land_in_the_end_bins():
    etf_like = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    histogram = geometry.similarity_histogram(etf_like, etf_like, bins=4)
    assert histogram.counts["positive"].tolist() == [0, 0, 0, 2]
    assert histogram.counts["negative"].tolist() == [2, 0, 0, 0]


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    u, v = views(20, 4, seed=3)
    path = tmp_path / "hist.png"
    figure = geometry.plot_similarity_histogram(geometry.similarity_histogram(u, v), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(figure.axes[0].patches) == 2  # positive and negative
    with pytest.raises(ValueError, match="kinds"):
        geometry.plot_similarity_histogram(geometry.similarity_histogram(u, v), kinds=("x",))


@pytest.mark.parametrize(
    "kwargs, match",
    [({"bins": 0}, "bins"), ({"scale": "angle"}, "scale"), ({"block_size": -1}, "block_size")],
)
def test_bad_arguments(kwargs, match):
    u, v = views(5, 3, seed=4)
    with pytest.raises(ValueError, match=match):
        geometry.similarity_histogram(u, v, **kwargs)
    with pytest.raises(ValueError, match="labels"):
        geometry.similarity_histogram(u, v, labels=torch.zeros(4, dtype=torch.int64))
