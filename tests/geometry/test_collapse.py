"""Neural-collapse and dimensional-collapse metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contrastkit import geometry, theory


def exact_neural_collapse(num_classes, dim, per_class, seed=0):
    """Every sample at its class mean; the means a simplex ETF, randomly rotated in R^dim."""
    generator = torch.Generator().manual_seed(seed)
    etf = torch.from_numpy(theory.simplex_etf(num_classes, dim))
    rotation, _ = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    labels = torch.arange(num_classes).repeat(per_class)
    return (etf @ rotation)[labels], labels


def random_features(samples, dim, num_classes, seed=1):
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn(samples, dim, generator=generator, dtype=torch.float64)
    z = z / z.norm(dim=1, keepdim=True)
    return z, torch.arange(samples) % num_classes


METRICS = [
    "zero_sum", "zero_sum_code", "unit_norm", "equal_inner_product", "equal_inner_product_max",
    "equal_inner_product_cosine", "equal_inner_product_cosine_max", "within_class_distance",
    "nc1", "equinorm", "equiangularity", "max_angle", "etf_distance",
]


@pytest.mark.parametrize("num_classes,dim", [(2, 1), (4, 3), (5, 8), (10, 9)])
def test_exact_neural_collapse_gives_zero(num_classes, dim):
    z, labels = exact_neural_collapse(num_classes, dim, per_class=3)
    metrics = geometry.neural_collapse(z, labels)
    assert metrics.num_classes == num_classes
    for name in METRICS:
        assert abs(getattr(metrics, name)) < 1e-10, name


def test_random_features_are_clearly_not_collapsed():
    z, labels = random_features(200, 16, 5)
    metrics = geometry.neural_collapse(z, labels)
    for name in METRICS:
        assert getattr(metrics, name) > 0.05, name


def test_paper_and_code_variants():
    z, labels = random_features(60, 6, 4, seed=2)
    metrics = geometry.neural_collapse(z, labels)
    # the code's zero-sum metric is the paper's divided by C
    assert metrics.zero_sum_code * 4 == pytest.approx(metrics.zero_sum, rel=1e-12)
    # raw and cosine equal-inner-product differ unless the means have unit norm
    assert abs(metrics.equal_inner_product - metrics.equal_inner_product_cosine) > 1e-3
    _, means = geometry.class_means(z, labels)
    unit_means = means / means.norm(dim=1, keepdim=True)
    on_sphere = geometry.neural_collapse(unit_means, torch.arange(4))
    assert on_sphere.equal_inner_product == pytest.approx(on_sphere.equal_inner_product_cosine)
    assert on_sphere.unit_norm == pytest.approx(0.0, abs=1e-15)


def test_metrics_equal_numpy_reference():
    z, labels = random_features(45, 5, 3, seed=3)
    z = z * torch.linspace(0.5, 1.5, 45, dtype=torch.float64)[:, None]  # unequal norms
    metrics = geometry.neural_collapse(z, labels)
    x, y = z.numpy(), labels.numpy()
    num = 3
    means = np.stack([x[y == c].mean(axis=0) for c in range(num)])
    pairs = [(j, k) for j in range(num) for k in range(num) if j != k]
    assert metrics.zero_sum == pytest.approx(np.linalg.norm(means.sum(axis=0)), rel=1e-12)
    assert metrics.unit_norm == pytest.approx(
        np.mean([abs(np.linalg.norm(m) - 1) for m in means]), rel=1e-12
    )
    gaps = [abs(means[j] @ means[k] + 1 / (num - 1)) for j, k in pairs]
    assert metrics.equal_inner_product == pytest.approx(np.mean(gaps), rel=1e-12)
    assert metrics.equal_inner_product_max == pytest.approx(np.max(gaps), rel=1e-12)
    norms = np.linalg.norm(means, axis=1)
    cosine_gaps = [abs(means[j] @ means[k] / (norms[j] * norms[k]) + 1 / (num - 1))
                   for j, k in pairs]
    assert metrics.equal_inner_product_cosine == pytest.approx(np.mean(cosine_gaps), rel=1e-12)
    within = np.mean([np.mean(np.linalg.norm(x[y == c] - means[c], axis=1)) for c in range(num)])
    assert metrics.within_class_distance == pytest.approx(within, rel=1e-12)
    # Papyan et al.: global mean of all samples, Sigma_W over samples, Sigma_B over classes
    centred = means - x.mean(axis=0)
    residual = x - means[y]
    sigma_w = residual.T @ residual / len(x)
    sigma_b = centred.T @ centred / num
    nc1 = np.trace(sigma_w @ np.linalg.pinv(sigma_b)) / num
    assert metrics.nc1 == pytest.approx(nc1, rel=1e-8)
    centred_norms = np.linalg.norm(centred, axis=1)
    assert metrics.equinorm == pytest.approx(centred_norms.std() / centred_norms.mean(), rel=1e-12)
    cosines = [centred[j] @ centred[k] / (centred_norms[j] * centred_norms[k]) for j, k in pairs]
    assert metrics.equiangularity == pytest.approx(np.std(cosines), rel=1e-10)
    assert metrics.max_angle == pytest.approx(
        np.mean([abs(c + 1 / (num - 1)) for c in cosines]), rel=1e-10
    )


def test_class_means_handles_unsorted_and_sparse_labels():
    z = torch.tensor([[1.0, 0.0], [0.0, 4.0], [3.0, 0.0], [0.0, 2.0]])
    classes, means = geometry.class_means(z, torch.tensor([7, 2, 7, 2]))
    assert classes.tolist() == [2, 7]
    assert means.tolist() == [[0.0, 3.0], [2.0, 0.0]]


# ---- dimensional collapse ----------------------------------------------------------------


def test_effective_rank_exact_values():
    assert geometry.effective_rank(torch.eye(6)) == pytest.approx(6.0, abs=1e-12)
    assert geometry.effective_rank(3.0 * torch.eye(6)) == pytest.approx(6.0, abs=1e-12)
    assert geometry.effective_rank(torch.ones(7, 4)) == pytest.approx(1.0, abs=1e-12)
    # a simplex ETF of C points has C - 1 equal non-zero singular values
    etf = torch.from_numpy(theory.simplex_etf(5, 8))
    assert geometry.effective_rank(etf) == pytest.approx(4.0, abs=1e-10)
    assert geometry.effective_rank(torch.zeros(3, 2)) == 0.0


def test_effective_rank_entropy_formula():
    z, _ = random_features(30, 5, 2, seed=4)
    singular = np.linalg.svd(z.numpy(), compute_uv=False)
    p = singular / singular.sum()
    assert geometry.effective_rank(z) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-12)
    centred = z - z.mean(dim=0)
    assert geometry.effective_rank(z, center=True) == pytest.approx(
        geometry.effective_rank(centred), rel=1e-12
    )


def test_singular_spectrum_is_the_covariance_spectrum():
    z, _ = random_features(40, 6, 2, seed=5)
    covariance = np.cov(z.numpy().T, bias=True)
    expected = np.sort(np.linalg.eigvalsh(covariance))[::-1]
    spectrum = geometry.singular_spectrum(z)
    assert spectrum.shape == (6,)
    np.testing.assert_allclose(spectrum.numpy(), expected, atol=1e-14)
    normalized = geometry.singular_spectrum(z, normalize=True)
    assert normalized[0] == 1.0
    np.testing.assert_allclose(normalized.numpy(), expected / expected[0], atol=1e-13)


def test_singular_spectrum_shows_dimensional_collapse():
    generator = torch.Generator().manual_seed(6)
    low_rank = torch.randn(50, 2, generator=generator, dtype=torch.float64) @ torch.randn(
        2, 8, generator=generator, dtype=torch.float64
    )
    spectrum = geometry.singular_spectrum(low_rank, normalize=True)
    assert (spectrum[2:] < 1e-12).all() and (spectrum[:2] > 1e-3).all()


def test_class_mean_spectrum():
    z, labels = exact_neural_collapse(6, 5, per_class=2)
    np.testing.assert_allclose(geometry.class_mean_spectrum(z, labels).numpy(), np.ones(5),
                               atol=1e-12)  # ETF with d = C - 1: all ones (spec 3.9 item 1)
    z, labels = random_features(60, 7, 5, seed=7)
    _, means = geometry.class_means(z, labels)
    expected = np.sort(np.linalg.eigvalsh(np.cov(means.numpy().T)))[::-1]
    spectrum = geometry.class_mean_spectrum(z, labels, normalize=False)
    np.testing.assert_allclose(spectrum.numpy(), np.clip(expected, 0, None), atol=1e-14)


# ---- nearest class mean ----------------------------------------------------------------


def test_nearest_class_mean_on_collapse_and_by_hand():
    z, labels = exact_neural_collapse(4, 3, per_class=5)
    assert geometry.nearest_class_mean_accuracy(z, labels, top_k=(1, 2)) == {
        "top1": 1.0, "top2": 1.0
    }
    train = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 3.0], [0.0, 3.0]])
    test = torch.tensor([[0.9, 0.1], [0.2, 2.0], [2.0, 1.0]])
    # inner product: [2, 1] scores 2 for class 0 and 3 for class 1 -> class 1 (wrong);
    # euclidean: [2, 1] is nearer to [1, 0] -> class 0 (right)
    truth = torch.tensor([0, 1, 0])
    inner = geometry.nearest_class_mean_accuracy(train, [0, 0, 1, 1], test, truth)
    euclid = geometry.nearest_class_mean_accuracy(train, [0, 0, 1, 1], test, truth,
                                                  metric="euclidean")
    assert inner == {"top1": pytest.approx(2 / 3)} and euclid == {"top1": 1.0}


# ---- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda z, y: geometry.neural_collapse(z, torch.zeros(10, dtype=torch.int64)), "2 classes"),
        (lambda z, y: geometry.neural_collapse(z, y[:-1]), "labels"),
        (lambda z, y: geometry.neural_collapse(z.clone().fill_(math.nan), y), "NaN"),
        (lambda z, y: geometry.neural_collapse(z[0], y), "2-D"),
        (lambda z, y: geometry.effective_rank(z[:0]), "at least 1"),
        (lambda z, y: geometry.class_mean_spectrum(z, torch.zeros(10, dtype=torch.int64)),
         "2 classes"),
        (lambda z, y: geometry.nearest_class_mean_accuracy(z, y, top_k=(3,)), "top_k"),
        (lambda z, y: geometry.nearest_class_mean_accuracy(z, y, metric="cos"), "metric"),
        (lambda z, y: geometry.nearest_class_mean_accuracy(z, y, z), "together"),
        (lambda z, y: geometry.nearest_class_mean_accuracy(z, y, z[:, :2], y), "dim"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    z, labels = random_features(10, 3, 2, seed=8)
    with pytest.raises(ValueError, match=match):
        call(z, labels)
