"""SCL, HSCL, UCL, HUCL of Jiang et al. ("Hard-negative sampling ... NC vs DC"): loop
references, both estimators, the sampler's law, Theorem 1, the values of Theorems 2 and 3 at
neural collapse, feature normalizations, gradients, bad input."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import losses
from contrastkit.losses.hard_negative import CustomPsi
from contrastkit.theory import simplex_etf
from tests.losses._reference_family import (
    hard_negative_exact_reference,
    hard_negative_importance_reference,
    psi_infonce_mean,
    psi_infonce_sum,
    psi_triplet,
    unit_rows,
)


def views(seed, batch=6, dim=3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, dim, generator=g, dtype=dtype),
            torch.randn(batch, dim, generator=g, dtype=dtype))


def generator(seed):
    return torch.Generator().manual_seed(seed)


def neural_collapse(num_classes, per_class):
    """Every sample at its class mean; the means a simplex ETF (Definition 6)."""
    means = torch.from_numpy(simplex_etf(num_classes, num_classes - 1))
    labels = torch.arange(num_classes * per_class) % num_classes
    return means[labels], labels


LABELS6 = torch.tensor([0, 1, 2, 0, 1, 2])


# ---- the importance-weighted estimator against the loop reference ---------------------------

@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("candidates", ["other_classes", "all", "all_but_self"])
@pytest.mark.parametrize("psi", ["infonce_mean", "infonce_sum", "triplet"])
@pytest.mark.parametrize("hardening, hardness", [("exponential", 0.0), ("exponential", 3.0),
                                                 ("polynomial", 5.0)])
def test_importance_matches_loop_reference(seed, candidates, psi, hardening, hardness):
    u, v = views(seed)
    hardness_kw = {"beta": hardness} if hardening == "exponential" else {"epsilon": hardness}
    got = losses.hard_negative_loss(
        u, v, LABELS6, candidates=candidates, estimator="importance", psi=psi, k=7,
        alpha=0.5, temperature=0.7, hardening=hardening, **hardness_kw,
    )
    expected = hard_negative_importance_reference(
        unit_rows(u), unit_rows(v), LABELS6, candidates=candidates, psi=psi, k=7, alpha=0.5,
        temperature=0.7, hardening=hardening, hardness=hardness,
    )
    assert got.item() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("reduction", ["pair", "anchor"])
def test_reductions_match_reference_with_unequal_classes(reduction):
    u, v = views(3, batch=7)
    labels = torch.tensor([0, 0, 0, 0, 1, 2, 2])
    got = losses.hscl(u, v, labels, beta=2.0, estimator="importance", reduction=reduction)
    expected = hard_negative_importance_reference(
        unit_rows(u), unit_rows(v), labels, candidates="other_classes", hardness=2.0,
        reduction=reduction,
    )
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_pair_and_anchor_reductions_differ_with_unequal_classes():
    u, v = views(3, batch=7)
    labels = torch.tensor([0, 0, 0, 0, 1, 2, 2])
    pair = losses.scl(u, v, labels, estimator="importance", reduction="pair")
    anchor = losses.scl(u, v, labels, estimator="importance", reduction="anchor")
    assert pair.item() != pytest.approx(anchor.item(), rel=1e-6)


def test_labels_none_means_one_positive_per_anchor():
    u, v = views(4)
    got = losses.ucl(u, v, None, estimator="importance", candidates="all_but_self")
    expected = hard_negative_importance_reference(
        unit_rows(u), unit_rows(v), torch.arange(6), candidates="all_but_self")
    assert got.item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("reduction", ["pair", "anchor"])
def test_view_positives_keep_the_labels_for_the_negatives_only(reduction):
    # the paper's Gaussian-noise positives with SCL (Fig. 2, bottom row): the positive is the
    # anchor's own other view, the negatives still come from the other classes
    u, v = views(5)
    got = losses.hscl(u, v, LABELS6, beta=1.5, positives="views", estimator="importance",
                      reduction=reduction)
    expected = hard_negative_importance_reference(
        unit_rows(u), unit_rows(v), LABELS6, candidates="other_classes", hardness=1.5,
        positives="views", reduction=reduction)
    assert got.item() == pytest.approx(expected, rel=1e-12)
    with_labels = losses.hscl(u, v, LABELS6, beta=1.5, estimator="importance")
    assert got.item() != pytest.approx(with_labels.item(), rel=1e-6)


def test_positives_must_be_labels_or_views():
    u, v = views(5)
    with pytest.raises(ValueError, match="positives"):
        losses.scl(u, v, LABELS6, positives="noise")


# ---- the resampling estimator ---------------------------------------------------------------

@pytest.mark.parametrize(
    "name, kwargs, psi_fn",
    [
        ("scl", {"candidates": "other_classes"}, psi_infonce_mean),
        ("hscl", {"candidates": "other_classes", "beta": 2.0}, psi_infonce_mean),
        ("hucl", {"candidates": "all", "beta": 2.0}, psi_infonce_mean),
        ("hucl-poly", {"candidates": "all_but_self", "hardening": "polynomial",
                       "epsilon": 3.0}, psi_infonce_mean),
        ("hscl-sum", {"candidates": "other_classes", "beta": 1.0, "psi": "infonce_sum"},
         psi_infonce_sum),
        ("hucl-triplet", {"candidates": "all", "beta": 1.0, "psi": "triplet"}, psi_triplet),
    ],
)
def test_resample_is_unbiased_for_the_exact_expectation(name, kwargs, psi_fn):
    """The mean over seeds of the resampled loss (k = 2) converges to the exact expectation,
    enumerated over every 2-tuple of candidates (the paper's Definition 3 on the batch)."""
    u, v = views(5)
    k, draws = 2, 200
    values = torch.tensor([
        losses.hard_negative_loss(u, v, LABELS6, k=k, generator=generator(seed), **kwargs).item()
        for seed in range(draws)
    ], dtype=torch.float64)
    hardening = kwargs.get("hardening", "exponential")
    hardness = kwargs.get("epsilon" if hardening == "polynomial" else "beta", 0.0)
    exact = hard_negative_exact_reference(
        unit_rows(u), unit_rows(v), LABELS6, candidates=kwargs["candidates"], k=k, psi=psi_fn,
        hardening=hardening, hardness=hardness,
    )
    standard_error = values.std().item() / math.sqrt(draws)
    assert standard_error > 0  # the estimator is random
    assert abs(values.mean().item() - exact) < 5 * standard_error


def test_resample_is_reproducible_and_leaves_global_rng_alone():
    u, v = views(6)
    state = torch.get_rng_state()
    first = losses.hscl(u, v, LABELS6, k=4, generator=generator(1))
    second = losses.hscl(u, v, LABELS6, k=4, generator=generator(1))
    other = losses.hscl(u, v, LABELS6, k=4, generator=generator(2))
    losses.hscl(u, v, LABELS6, k=4)  # generator=None: a fresh generator, not the global one
    assert torch.equal(torch.get_rng_state(), state)
    assert first.item() == second.item()
    assert first.item() != other.item()


def _recorded_differences(u, v, labels, **kwargs):
    """Run the loss with a psi that records the sampled differences t (first direction)."""
    record = []

    def psi(t):
        record.append(t.detach())
        return psi_mean.of_samples(t)

    psi_mean = losses.hard_negative.InfoNCEMean()
    losses.hard_negative_loss(u, v, labels, psi=CustomPsi(psi), **kwargs)
    return record[0]


def test_sampler_frequencies_follow_the_tilted_law():
    """Each candidate is drawn with probability e^{beta s_ij} / sum_m e^{beta s_im}."""
    u, _ = views(7, batch=4)
    z = unit_rows(u)
    beta, k = 1.5, 20_000
    t = _recorded_differences(u, u, None, candidates="all", beta=beta, k=k,
                              generator=generator(0))
    sims = z @ z.T
    for i in range(4):
        expected_t = sims[i] - sims[i, i]  # candidates are all rows; positive is row i itself
        drawn = (t[i].unsqueeze(1) - expected_t.unsqueeze(0)).abs().argmin(dim=1)
        frequency = torch.bincount(drawn, minlength=4).double() / k
        law = torch.softmax(beta * sims[i], dim=0)
        assert torch.allclose(frequency, law, atol=0.015)


def test_supervised_candidates_never_share_the_anchor_class():
    # classes at orthonormal points: same-class differences are 0, other-class ones -1
    labels = torch.tensor([0, 0, 1, 1])
    z = torch.eye(2, dtype=torch.float64)[labels]
    scl_t = _recorded_differences(z, z, labels, candidates="other_classes", k=500,
                                  generator=generator(0))
    assert torch.all(scl_t == -1.0)
    ucl_t = _recorded_differences(z, z, labels, candidates="all", k=500, generator=generator(0))
    assert torch.any(ucl_t == 0.0) and torch.any(ucl_t == -1.0)


def test_all_but_self_never_draws_the_anchors_own_positive():
    u, _ = views(8, batch=4)
    t = _recorded_differences(u, u, None, candidates="all_but_self", k=2000,
                              generator=generator(0))
    assert torch.all(t != 0.0)  # t = 0 only for the anchor's own row
    t_all = _recorded_differences(u, u, None, candidates="all", k=2000, generator=generator(0))
    assert torch.any(t_all == 0.0)


# ---- identities -----------------------------------------------------------------------------

@pytest.mark.parametrize("estimator", ["resample", "importance"])
@pytest.mark.parametrize("seed", range(3))
def test_hscl_beta_zero_is_scl(estimator, seed):
    u, v = views(seed)
    hard = losses.hscl(u, v, LABELS6, beta=0.0, estimator=estimator, k=16,
                       generator=generator(seed))
    plain = losses.scl(u, v, LABELS6, estimator=estimator, k=16, generator=generator(seed))
    assert hard.item() == plain.item()
    poly = losses.hscl(u, v, LABELS6, beta=0.0, hardening="polynomial", epsilon=0.0,
                       estimator=estimator, k=16, generator=generator(seed))
    assert poly.item() == plain.item()


def test_hucl_beta_zero_is_ucl():
    u, v = views(9)
    assert losses.hucl(u, v, LABELS6, beta=0.0, estimator="importance").item() == (
        losses.ucl(u, v, LABELS6, estimator="importance").item())


def test_hscl_defaults_to_beta_5_or_to_polynomial_alone():
    u, v = views(20)
    common = dict(estimator="importance")
    assert losses.hscl(u, v, LABELS6, **common).item() == (
        losses.hscl(u, v, LABELS6, beta=5.0, **common).item())
    poly = losses.hscl(u, v, LABELS6, hardening="polynomial", epsilon=3.0, **common)
    assert poly.item() == losses.HSCL(hardening="polynomial", epsilon=3.0, **common)(
        u, v, LABELS6).item()
    assert poly.item() == losses.hard_negative_loss(
        u, v, LABELS6, candidates="other_classes", hardening="polynomial", epsilon=3.0,
        **common).item()


def test_hardness_changes_the_loss():
    u, v = views(10)
    assert losses.hscl(u, v, LABELS6, beta=3.0, estimator="importance").item() != pytest.approx(
        losses.scl(u, v, LABELS6, estimator="importance").item(), rel=1e-4)


# ---- Theorem 1: hard >= plain, for any f ----------------------------------------------------

@pytest.mark.parametrize("psi", ["infonce_mean", "infonce_sum", "triplet"])
@pytest.mark.parametrize("candidates", ["other_classes", "all"])
def test_theorem1_importance_hard_never_below_plain(psi, candidates):
    for seed in range(25):
        u, v = views(seed, batch=8, dim=4)
        labels = torch.arange(8) % 3
        common = dict(candidates=candidates, estimator="importance", psi=psi, k=5,
                      normalize="ball")
        u, v = 1.5 * u, 0.5 * v  # some rows inside the ball, some projected onto it
        plain = losses.hard_negative_loss(u, v, labels, **common).item()
        for hardness in ({"beta": 0.5}, {"beta": 5.0},
                         {"hardening": "polynomial", "epsilon": 3.0}):
            hard = losses.hard_negative_loss(u, v, labels, **common, **hardness).item()
            assert hard >= plain - 1e-12, (seed, hardness)


@pytest.mark.parametrize("candidates", ["other_classes", "all"])
def test_theorem1_exact_expectation_hard_never_below_plain(candidates):
    """Theorem 1 at finite k = 2, on the exact expectation the resampled loss estimates."""
    for seed in range(10):
        u, v = views(100 + seed)
        plain = hard_negative_exact_reference(unit_rows(u), unit_rows(v), LABELS6,
                                              candidates=candidates, k=2)
        hard = hard_negative_exact_reference(unit_rows(u), unit_rows(v), LABELS6,
                                             candidates=candidates, k=2, hardness=2.0)
        assert hard >= plain - 1e-12


# ---- Theorems 2 and 3 at neural collapse (reference values of seed-004 §3.8) ----------------

@pytest.mark.parametrize("estimator", ["resample", "importance"])
@pytest.mark.parametrize("beta", [0.0, 2.0, 10.0, 30.0])
def test_scl_and_hscl_at_nc_equal_the_theorem2_bound_c3(estimator, beta):
    """Theorem 2 and its (vi): SCL = HSCL = log(1 + e^{-C/(C-1)}) = 0.2014133 (C = 3, any k,
    any beta); the paper reports 0.2014 (§5.1)."""
    z, labels = neural_collapse(3, 4)
    got = losses.hscl(z, z, labels, beta=beta, k=256, estimator=estimator,
                      generator=generator(0)).item()
    assert got == pytest.approx(0.2014133, abs=1e-7)
    assert got == pytest.approx(0.2014, abs=1e-4)


def test_scl_at_nc_equals_the_theorem2_bound_c100():
    """C = 100: 0.3105551, which Table 1 prints truncated as 0.3105."""
    z, labels = neural_collapse(100, 1)
    got = losses.scl(z, z, labels, k=256, generator=generator(0)).item()
    assert got == pytest.approx(0.3105551, abs=1e-7)
    assert 0.3105 <= got < 0.3106


def test_ucl_at_nc_resampled_matches_the_theorem3_bound_k256():
    """Theorem 3 (positives conditionally independent: uniform over the anchor's class, self
    included): the expected UCL loss at NC is the binomial bound 0.3933318 for C = 3,
    k = 256 (seed-004 §3.8; the paper prints 0.3935). Monte Carlo over 9600 pairs, standard
    error about 1.6e-4."""
    z, labels = neural_collapse(3, 40)
    got = losses.ucl(z, z, labels, k=256, generator=generator(0)).item()
    assert got == pytest.approx(0.3933318, abs=1e-3)


def test_ucl_at_nc_importance_is_the_k_infinity_limit():
    """The importance form is the k -> infinity limit log(1 + 1/C + (C-1)/C e^{-C/(C-1)}) =
    0.3934511 for C = 3 (seed-004 §3.8), the value the paper rounds to 0.3935."""
    z, labels = neural_collapse(3, 4)
    got = losses.ucl(z, z, labels, estimator="importance").item()
    assert got == pytest.approx(0.3934511, abs=1e-7)
    assert got == pytest.approx(0.3935, abs=1e-4)


def test_ucl_and_hucl_at_nc_k2_exact_and_resampled():
    """k = 2, C = 3: UCL at NC = 0.3786250 (the Theorem 3 bound) and HUCL (beta = 3) =
    0.683732 > UCL (no analogue of Theorem 2 (vi)); seed-004 §3.8 and §3.9 item 5."""
    z, labels = neural_collapse(3, 2)
    ucl_exact = hard_negative_exact_reference(z, z, labels, candidates="all", k=2)
    hucl_exact = hard_negative_exact_reference(z, z, labels, candidates="all", k=2, hardness=3.0)
    assert ucl_exact == pytest.approx(0.3786250, abs=1e-6)  # the spec quotes 6 decimals
    assert hucl_exact == pytest.approx(0.683732, abs=1e-6)
    z_many, labels_many = neural_collapse(3, 30)
    ucl_mc = losses.ucl(z_many, z_many, labels_many, k=2, generator=generator(0)).item()
    hucl_mc = losses.hucl(z_many, z_many, labels_many, beta=3.0, k=2,
                          generator=generator(0)).item()
    assert ucl_mc == pytest.approx(0.3786250, abs=5e-3)
    assert hucl_mc == pytest.approx(0.683732, abs=5e-3)


@pytest.mark.parametrize("beta, expected", [(2.0, 0.657), (5.0, 0.693), (10.0, 0.693)])
def test_hucl_at_nc_importance_matches_seed004_table(beta, expected):
    """seed-004 §4.10 (C = 3): log(1 + q + (1 - q) e^{-C/(C-1)}), q = tilted same-class mass."""
    z, labels = neural_collapse(3, 4)
    got = losses.hucl(z, z, labels, beta=beta, estimator="importance").item()
    assert got == pytest.approx(expected, abs=5e-4)


# ---- feature normalizations -----------------------------------------------------------------

def test_feature_normalizations():
    z = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0]], dtype=torch.float64)
    ball = losses.normalize_features(z, "ball")
    assert torch.allclose(ball, torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.0, 1.0]],
                                             dtype=torch.float64))
    assert torch.allclose(losses.normalize_features(z, "sphere").norm(dim=1),
                          torch.ones(3, dtype=torch.float64))
    assert torch.equal(losses.normalize_features(z, True), losses.normalize_features(z, "sphere"))
    assert torch.allclose(losses.normalize_features(z, "none"), z / math.sqrt(2))
    assert losses.normalize_features(z, False) is z
    with pytest.raises(ValueError, match="normalize"):
        losses.normalize_features(z, "l2")


@pytest.mark.parametrize("mode", ["ball", "none", False])
def test_loss_uses_the_chosen_normalization(mode):
    u, v = views(11)
    u, v = 0.4 * u, 0.4 * v
    got = losses.hscl(u, v, LABELS6, beta=1.0, estimator="importance", normalize=mode)
    nu, nv = losses.normalize_features(u, mode), losses.normalize_features(v, mode)
    expected = hard_negative_importance_reference(nu, nv, LABELS6, candidates="other_classes",
                                                  hardness=1.0)
    assert got.item() == pytest.approx(expected, rel=1e-12)


# ---- gradients ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    dict(candidates="other_classes", beta=2.0, estimator="importance"),
    dict(candidates="all", hardening="polynomial", epsilon=3.0, estimator="importance",
         psi="infonce_sum"),
    dict(candidates="all_but_self", beta=1.0, estimator="importance", psi="triplet",
         reduction="anchor"),
])
def test_gradcheck_importance(kwargs):
    u, v = views(12, batch=5)
    u.requires_grad_(True)
    v.requires_grad_(True)
    labels = torch.tensor([0, 1, 0, 1, 2])
    fn = lambda a, b: losses.hard_negative_loss(a, b, labels, **kwargs)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (u, v))


def test_gradcheck_resample_with_fixed_draws():
    u, v = views(13, batch=5)
    u.requires_grad_(True)
    v.requires_grad_(True)
    labels = torch.tensor([0, 1, 0, 1, 2])

    def fn(a, b):
        return losses.hscl(a, b, labels, beta=2.0, k=6, generator=generator(0))

    assert torch.autograd.gradcheck(fn, (u, v))


def test_detached_weights_change_only_the_gradient():
    u, v = views(14)
    results = []
    for detach in (False, True):
        a = u.clone().requires_grad_(True)
        value = losses.hscl(a, v, LABELS6, beta=3.0, estimator="importance",
                            detach_weights=detach)
        value.backward()
        results.append((value.item(), a.grad))
    assert results[0][0] == results[1][0]
    assert not torch.allclose(results[0][1], results[1][1])


# ---- modules --------------------------------------------------------------------------------

def test_modules_match_functions_and_compose():
    u, v = views(15)
    assert losses.SCL(estimator="importance")(u, v, LABELS6).item() == (
        losses.scl(u, v, LABELS6, estimator="importance").item())
    assert losses.HSCL(beta=2.0, k=8, generator=generator(3))(u, v, LABELS6).item() == (
        losses.hscl(u, v, LABELS6, beta=2.0, k=8, generator=generator(3)).item())
    ucl_module = losses.UCL(estimator="importance")
    assert not ucl_module.uses_labels
    assert ucl_module(u, v, LABELS6).item() == losses.ucl(u, v, estimator="importance").item()
    hucl_module = losses.HUCL(beta=2.0, estimator="importance", label_positives=True)
    assert hucl_module.uses_labels and hucl_module.name == "hucl"
    assert hucl_module(u, v, LABELS6).item() == (
        losses.hucl(u, v, LABELS6, beta=2.0, estimator="importance").item())
    out = (losses.SCL(estimator="importance") + 0.1 * losses.Polarization()).compute(
        u, v, LABELS6)
    assert set(out.parts) == {"scl", "polarization"}
    with pytest.raises(ValueError, match="labels"):
        losses.SCL()(u, v)


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "labels, match",
    [(torch.tensor([0, 1, 2, 0, 1]), "length 5"), (torch.tensor([0.0, 1, 2, 0, 1, 2]), "integer"),
     (torch.zeros(6, 1, dtype=torch.long), "1-D")],
)
def test_bad_labels(labels, match):
    u, v = views(16)
    with pytest.raises(ValueError, match="labels") as info:
        losses.scl(u, v, labels)
    assert match in str(info.value)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"beta": -1.0}, "beta"),
        ({"k": 0}, "k"),
        ({"k": 2.5}, "k"),
        ({"k": True}, "k"),
        ({"epsilon": 2.0}, "epsilon"),
        ({"hardening": "polynomial", "epsilon": -1.0, "beta": 0.0}, "epsilon"),
        ({"hardening": "polynomial", "epsilon": 1.0, "beta": 1.0}, "beta"),
        ({"hardening": "cubic"}, "hardening"),
        ({"estimator": "exact"}, "estimator"),
        ({"psi": "hinge"}, "psi"),
        ({"alpha": 0.0, "psi": "infonce_sum"}, "alpha"),
        ({"reduction": "sum"}, "reduction"),
        ({"normalize": "l2"}, "normalize"),
        ({"temperature": 0.0}, "temperature"),
        ({"generator": 0}, "generator"),
        ({"psi": lambda t: t.sum(-1), "estimator": "importance"}, "psi"),
    ],
)
def test_bad_options(kwargs, name):
    u, v = views(17)
    options = {"beta": 1.0, **kwargs}
    with pytest.raises(ValueError, match=name):
        losses.hscl(u, v, LABELS6, **options)
    if "generator" not in kwargs:
        with pytest.raises(ValueError, match=name):
            losses.HSCL(**options)


def test_bad_candidates():
    u, v = views(18)
    with pytest.raises(ValueError, match="candidates"):
        losses.hard_negative_loss(u, v, LABELS6, candidates="others")
    with pytest.raises(ValueError, match="scl"):
        losses.ucl(u, v, candidates="other_classes")
    with pytest.raises(ValueError, match="labels"):
        losses.SCL(label_positives=False)


def test_single_class_batch_has_no_supervised_negatives():
    u, v = views(19)
    with pytest.raises(ValueError, match="single class"):
        losses.scl(u, v, torch.zeros(6, dtype=torch.long))


def test_polynomial_weights_vanishing_raise():
    z = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="polynomial"):
        losses.hscl(z, z, torch.tensor([0, 1]), beta=0.0, hardening="polynomial", epsilon=2.0)


@pytest.mark.parametrize("normalize", ["sphere", "ball", "none"])
def test_one_tensor_passed_twice_is_computed_once_whatever_the_normalization(normalize):
    """The paper's single-view batches: one direction, one draw of negatives; two tensors
    (even equal ones) are two views, two directions."""
    calls = []

    def psi(t):
        calls.append(t.shape)
        return losses.hard_negative.InfoNCEMean().of_samples(t)

    z, _ = views(11, batch=6)
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    for v, directions in ((z, 1), (z.clone(), 2)):
        calls.clear()
        losses.hard_negative_loss(z, v, labels, candidates="other_classes", psi=CustomPsi(psi),
                                  k=4, normalize=normalize, generator=generator(0))
        assert len(calls) == directions
