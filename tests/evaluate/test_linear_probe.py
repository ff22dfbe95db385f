"""The L-BFGS linear probe: the penalized optimum (zero gradient, an independent SciPy solve),
deterministic and seed-free; the SGD probe bit for bit as before; both agree on digits."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize

from contrastkit.data import gaussian_mixture, load_dataset
from contrastkit.evaluate import linear_probe, train_linear_classifier
from contrastkit.evaluate.linear import L2_PENALTY, PAPER_PROBE_STEPS
from contrastkit.rows import unit_rows


def separable(n=200):
    """Three well-separated clusters in 5 dimensions (float64): linearly separable after
    L2 normalization, so unpenalized logistic regression would have no finite optimum."""
    x, y = gaussian_mixture(n, 5, num_classes=3, separation=4.0, noise=0.3, seed=0)
    return x.double(), y


def noisy(n=300):
    """Gaussian features with random labels (4 classes in 6 dimensions): not separable."""
    generator = torch.Generator().manual_seed(1)
    return (torch.randn(n, 6, generator=generator, dtype=torch.float64),
            torch.randint(0, 4, (n,), generator=generator))


def objective(theta, x, y, classes, penalty):
    """The penalized mean cross-entropy and its gradient, written out in numpy (float64);
    ``theta`` is the flattened ``(classes, d)`` weight followed by the bias."""
    n, d = x.shape
    weight, bias = theta[:classes * d].reshape(classes, d), theta[classes * d:]
    logits = x @ weight.T + bias
    logits -= logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    value = -log_p[np.arange(n), y].mean() + 0.5 * penalty * (weight ** 2).sum()
    residual = np.exp(log_p)
    residual[np.arange(n), y] -= 1.0
    residual /= n
    return value, np.concatenate([(residual.T @ x + penalty * weight).ravel(),
                                  residual.sum(axis=0)])


def unit(x):
    x = x.double().numpy()
    return x / np.linalg.norm(x, axis=1, keepdims=True)


PROBLEMS = {"separable": (separable, 1e-2), "noisy": (noisy, 1e-3)}


@pytest.mark.parametrize("name", PROBLEMS)
def test_lbfgs_returns_the_penalized_optimum(name):
    make, penalty = PROBLEMS[name]
    x, y = make()
    classes = int(y.max()) + 1
    classifier = train_linear_classifier(x, y, classes, l2_penalty=penalty, tolerance=1e-10)
    assert classifier.weight.dtype == torch.float64
    fitted = np.concatenate([classifier.weight.detach().numpy().ravel(),
                             classifier.bias.detach().numpy()])
    inputs = unit(x)
    # first-order optimality of the penalized objective, checked by the numpy gradient
    _, gradient = objective(fitted, inputs, y.numpy(), classes, penalty)
    assert np.abs(gradient).max() < 1e-9
    if name == "separable":  # the clusters are separated: the fit classifies them all
        predictions = (inputs @ classifier.weight.detach().numpy().T).argmax(1)
        assert (predictions == y.numpy()).all()
    # an independent solve of the same objective: SciPy's L-BFGS-B
    reference = minimize(objective, np.zeros_like(fitted), args=(inputs, y.numpy(), classes,
                                                                  penalty),
                         jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10_000}).x
    reference[-classes:] -= reference[-classes:].mean()  # the bias's mean is not identified
    np.testing.assert_allclose(fitted, reference, rtol=0, atol=1e-6)


def test_lbfgs_is_deterministic_and_ignores_the_seed():
    x, y = noisy()
    first = train_linear_classifier(x, y, 4, seed=0)
    for seed in (0, 7):
        again = train_linear_classifier(x, y, 4, seed=seed)
        assert torch.equal(first.weight, again.weight) and torch.equal(first.bias, again.bias)


def test_lbfgs_defaults_float32_output_and_penalty():
    x, y = noisy()
    single = train_linear_classifier(x.float(), y.int(), 4)
    double = train_linear_classifier(x, y, 4, l2_penalty=L2_PENALTY)
    assert single.weight.dtype == torch.float32
    torch.testing.assert_close(single.weight, double.weight.float(), rtol=0, atol=1e-6)


def test_lbfgs_reports_each_iteration_and_stops_at_max_iter():
    x, y = noisy()
    reports = []
    train_linear_classifier(x, y, 4, max_iter=3, on_epoch=lambda i, loss: reports.append((i,
                                                                                      loss)))
    assert [i for i, _ in reports] == [0, 1, 2]
    assert reports[-1][1] < reports[0][1] < np.log(4)  # the cross-entropy falls from log C


def test_an_absent_class_gets_bias_minus_infinity():
    x, y = noisy()
    keep = y < 3
    fitted = train_linear_classifier(x[keep], y[keep], 5)
    alone = train_linear_classifier(x[keep], y[keep], 3)
    assert torch.equal(fitted.weight[:3], alone.weight) and torch.equal(fitted.bias[:3],
                                                                        alone.bias)
    assert (fitted.weight[3:] == 0).all() and (fitted.bias[3:] == -torch.inf).all()
    result = linear_probe(x[keep], y[keep], x, y, 5)
    assert 0.0 < result["top1"] < 100.0 and result["top5"] == 100.0


def app_d_reference(features, labels, num_classes, epochs, seed):
    """The SGD probe as it was before the L-BFGS solver (App. D: lr 0.1, momentum 0.9, batch
    256, cosine decay), copied from the earlier module, with its per-epoch mean losses."""
    generator = torch.Generator().manual_seed(seed)
    inputs = unit_rows(features.float())
    classifier = torch.nn.Linear(inputs.shape[1], num_classes)
    with torch.no_grad():
        bound = inputs.shape[1] ** -0.5
        classifier.weight.uniform_(-bound, bound, generator=generator)
        classifier.bias.zero_()
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1, momentum=0.9, weight_decay=0.0)
    steps_per_epoch = -(-inputs.shape[0] // 256)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs * steps_per_epoch)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(inputs.shape[0], generator=generator)
        loss_sum = torch.zeros(())
        for start in range(0, inputs.shape[0], 256):
            batch = order[start:start + 256]
            loss = F.cross_entropy(classifier(inputs[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            loss_sum += loss.detach() * len(batch)
        losses.append(loss_sum.item() / inputs.shape[0])
    return classifier, losses


def test_sgd_solver_is_bit_for_bit_the_app_d_probe():
    x, y = gaussian_mixture(600, 16, num_classes=10, separation=2.0, noise=1.0, seed=3)
    expected, expected_losses = app_d_reference(x, y, 10, epochs=3, seed=5)
    losses = []
    got = train_linear_classifier(x, y, 10, epochs=3, seed=5, solver="sgd",
                                  on_epoch=lambda _, loss: losses.append(loss))
    assert torch.equal(got.weight, expected.weight) and torch.equal(got.bias, expected.bias)
    assert losses == expected_losses


@pytest.mark.slow
def test_lbfgs_agrees_with_sgd_run_for_the_paper_s_steps_on_digit_pixels():
    """Raw digit pixels (uint8, L2-normalized by the probe): the default L-BFGS probe within
    half a point (one test image is 0.28 points) of the paper's SGD probe run for as many steps
    as on CIFAR (39 200: 6 534 epochs of 1 437 images), which is what its penalty stands for."""
    assert PAPER_PROBE_STEPS == 39_200
    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    data = (train.images.flatten(1), train.labels, test.images.flatten(1), test.labels, 10)
    epochs = -(-PAPER_PROBE_STEPS // -(-len(train.labels) // 256))
    sgd = linear_probe(*data, epochs=epochs, solver="sgd")["top1"]
    lbfgs = linear_probe(*data)["top1"]
    assert abs(lbfgs - sgd) <= 0.5


def data(n=10, d=3, classes=2):
    return torch.randn(n, d), torch.arange(n) % classes


@pytest.mark.parametrize("change, name", [
    ({"solver": "adam"}, "solver"),
    ({"l2_penalty": 0.0}, "l2_penalty"),
    ({"l2_penalty": -1.0}, "l2_penalty"),
    ({"tolerance": 0.0}, "tolerance"),
    ({"max_iter": 0}, "max_iter"),
    ({"epochs": 0}, "epochs"),
    ({"lr": 0.0}, "lr"),
    ({"batch_size": 0}, "batch_size"),
    ({"momentum": -0.5}, "momentum"),
    ({"num_classes": 0}, "num_classes"),
    ({"labels": torch.arange(10) % 3}, "labels"),
    ({"labels": torch.full((10,), -1)}, "labels"),
    ({"labels": torch.zeros(10)}, "labels"),
    ({"features": torch.full((10, 3), float("nan"))}, "features"),
    ({"features": torch.randn(10)}, "features"),
])
def test_bad_arguments_name_the_argument(change, name):
    features, labels = data()
    arguments = {"features": features, "labels": labels, "num_classes": 2, **change}
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        train_linear_classifier(**arguments)


def test_linear_probe_names_its_test_arguments():
    features, labels = data()
    with pytest.raises(ValueError, match="test_features"):
        linear_probe(features, labels, torch.randn(4, 5), labels[:4], 2)
    with pytest.raises(ValueError, match="test_labels"):
        linear_probe(features, labels, features, labels + 2, 2)
