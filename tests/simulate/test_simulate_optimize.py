"""The simulator reaches the optima the theory predicts (central paper Thm 5.1, 5.3, 5.5;
sigmoid paper Theorem 2 and its extension). Small n, float64, Adam with cosine decay."""

import functools

import pytest
import torch

from contrastkit import losses, theory
from contrastkit.simulate import optimize_embeddings

N, D = 6, 8


def _siglip(t, b):
    """losses.siglip in the papers' (t, b): scale = t, bias = -b."""
    return functools.partial(losses.siglip, scale=t, bias=-b)


THEOREM_5_1_LOSSES = {
    "info_nce": functools.partial(losses.info_nce, temperature=0.5),
    "simclr": functools.partial(losses.simclr, temperature=0.5),
    "dcl": functools.partial(losses.dcl, temperature=0.5),
    "dhel": functools.partial(losses.dhel, temperature=0.5),
    # case (iii): t = b = 2 is above the ETF threshold 0.9155 of N = 6
    "siglip": _siglip(2.0, 2.0),
}


@pytest.mark.parametrize("name", THEOREM_5_1_LOSSES)
def test_theorem_5_1_full_batch_reaches_aligned_simplex(name):
    assert not theory.sigmoid_excessive_separation(N, 2.0, 2.0)  # case (iii) indeed
    result = optimize_embeddings(THEOREM_5_1_LOSSES[name], N, D, steps=400, lr=0.1, seed=1)
    stats = result.stats
    assert stats.positive_mean == pytest.approx(1.0, abs=1e-4)
    assert stats.negative_mean == pytest.approx(-1 / (N - 1), abs=1e-4)
    assert stats.negative_var == pytest.approx(0.0, abs=1e-8)  # every negative at -1/(n-1)
    assert result.history[-1]["loss"] < result.history[0]["loss"]


def test_spectral_loss_is_a_counterexample_to_theorem_5_1():
    # Table 3's spectral loss has psi(x) = x^2, which is not increasing on [-1, 0] as Def. 3.2
    # requires. With d >= n, orthonormal pairs (negatives at 0) beat the simplex ETF.
    n, d = 6, 6
    etf = torch.from_numpy(theory.simplex_etf(n, d))
    result = optimize_embeddings(losses.spectral, n, d, steps=400, lr=0.1, seed=0)
    stats = result.stats
    assert stats.positive_mean == pytest.approx(1.0, abs=1e-6)
    assert stats.negative_mean == pytest.approx(0.0, abs=1e-6)
    assert result.history[-1]["loss"] == pytest.approx(-1.0, abs=1e-8)
    assert float(losses.spectral(etf, etf)) == pytest.approx(-1 + 1 / (n - 1) ** 2)


@pytest.mark.parametrize("n, t, b", [(6, 5.0, 1.0), (8, 1.0, 1.0)])
def test_theorem_5_3_sigmoid_excessive_separation(n, t, b):
    assert theory.sigmoid_excessive_separation(n, t, b)  # condition (10)
    result = optimize_embeddings(_siglip(t, b), n, n, steps=400, lr=0.1, seed=2)
    stats = result.stats
    opt = theory.sigmoid_optimum(n, t, b)
    assert stats.positive_mean < 1 - 0.1
    assert stats.negative_mean < -1 / (n - 1) - 0.01
    assert stats.positive_mean == pytest.approx(opt.positive_similarity, abs=1e-6)
    assert stats.negative_mean == pytest.approx(opt.negative_similarity, abs=1e-6)


@pytest.mark.parametrize(
    "n, t, b",
    [
        (5, 0.3, 0.3), (5, 0.5, 0.5), (8, 0.75, 0.75), (8, 1.0, 1.0), (10, 1.5, 1.5),
        (12, 1.5, 1.5), (8, 2.0, 0.0), (10, 3.0, 1.0), (8, 0.3, 0.3), (8, 1.0, 3.0),
    ],
)
def test_sigmoid_optimum_agrees_with_simulation(n, t, b):
    opt = theory.sigmoid_optimum(n, t, b)
    result = optimize_embeddings(_siglip(t, b), n, n + 1, steps=400, lr=0.1, seed=0)
    stats = result.stats
    assert stats.positive_mean == pytest.approx(opt.positive_similarity, abs=1e-3)
    assert stats.negative_mean == pytest.approx(opt.negative_similarity, abs=1e-3)
    assert stats.within_mean == pytest.approx(opt.within_similarity, abs=1e-3)
    assert result.history[-1]["loss"] == pytest.approx(opt.loss, abs=1e-6)


def test_theorem_5_5_fixed_minibatches_variance_within_bounds():
    n, m = 8, 4
    bounds = theory.minibatch_variance_bounds(n, m)
    for seed in range(3):
        loss = losses.SimCLR(temperature=0.2)
        result = optimize_embeddings(loss, n, 16, batching="fixed", batch_size=m, steps=400,
                                     lr=0.1, seed=seed)
        stats = result.stats
        assert stats.positive_mean == pytest.approx(1.0, abs=1e-4)
        assert stats.negative_mean == pytest.approx(-1 / (n - 1), abs=1e-4)
        assert bounds.low - 1e-6 <= stats.negative_var <= bounds.high + 1e-6


def test_vrns_lowers_the_variance_of_negative_similarities():
    # random mini-batches (every pair meets in some batch over time), SimCLR vs SimCLR + VRNS
    n, m = 8, 4
    plain = optimize_embeddings(losses.SimCLR(temperature=0.2), n, 16, batching="random",
                                batch_size=m, steps=300, lr=0.05, seed=0)
    composite = losses.SimCLR(temperature=0.2) + 10 * losses.VRNS(n=n)
    regularized = optimize_embeddings(composite, n, 16, batching="random", batch_size=m,
                                      steps=300, lr=0.05, seed=0)
    assert regularized.stats.negative_var < plain.stats.negative_var / 10
    assert {"simclr", "vrns"} <= set(regularized.history[-1])  # parts are recorded


def test_history_and_reproducibility():
    run = functools.partial(optimize_embeddings, losses.simclr, 8, 4, batching="random",
                            batch_size=3, steps=20, record_every=5, seed=3)
    first, second = run(), run()
    assert torch.equal(first.u, second.u) and torch.equal(first.v, second.v)
    assert [entry["step"] for entry in first.history] == [0, 5, 10, 15, 20]
    entry = first.history[-1]
    assert {"loss", "positive_mean", "negative_var", "within_mean"} <= set(entry)
    assert torch.allclose(first.u.norm(dim=1), torch.ones(8, dtype=torch.float64))


def test_observe_adds_its_statistics_of_the_embeddings_to_every_record():
    result = optimize_embeddings(losses.simclr, 5, 3, steps=20, record_every=10, seed=1,
                                 observe=lambda u, v: {"first_u": float(u[0, 0]),
                                                       "grad": float(u.requires_grad)})
    assert [entry["step"] for entry in result.history] == [0, 10, 20]
    assert result.history[-1]["first_u"] == float(result.u[0, 0])
    assert result.history[0]["first_u"] != result.history[-1]["first_u"]
    assert all(entry["grad"] == 0.0 for entry in result.history)  # detached


def test_plain_gradient_descent_on_the_paper_protocol():
    # sigmoid paper Fig. 2 protocol: projected GD, lr 0.5 (fewer steps, away from thresholds)
    opt = theory.sigmoid_optimum(8, 1.0, 1.0)
    result = optimize_embeddings(_siglip(1.0, 1.0), 8, 8, steps=3000, lr=0.5, optimizer="sgd",
                                 schedule="constant", seed=0)
    assert result.stats.positive_mean == pytest.approx(opt.positive_similarity, abs=1e-3)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n=1, d=3), "n"),
        (dict(n=4, d=0), "d"),
        (dict(n=6, d=3, batching="fixed", batch_size=4), "batch_size"),
        (dict(n=6, d=3, batching="fixed"), "batch_size"),
        (dict(n=6, d=3, batching="random", batch_size=1), "batch_size"),
        (dict(n=6, d=3, batching="random", batch_size=7), "batch_size"),
        (dict(n=6, d=3, batching="full", batch_size=3), "batch_size"),
        (dict(n=6, d=3, batching="shuffled"), "batching"),
        (dict(n=6, d=3, lr=0.0), "lr"),
        (dict(n=6, d=3, steps=-1), "steps"),
        (dict(n=6, d=3, optimizer="lbfgs"), "optimizer"),
        (dict(n=6, d=3, schedule="step"), "schedule"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        optimize_embeddings(losses.simclr, **kwargs)


def test_loss_must_be_callable():
    with pytest.raises(ValueError, match="^loss"):
        optimize_embeddings("simclr", 4, 3)
