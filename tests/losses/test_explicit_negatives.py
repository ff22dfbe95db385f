"""Explicit negatives (each anchor's own ``(B, k, d)`` or a pool ``(M, d)``) in InfoNCE, SigLIP
and the hard-negative losses, and InfoNCE's one-way form: each against a float64 loop from the
formulas of ``contrastkit.losses.explicit_negatives``, through the kernels, the small-matrix
path and the chunked path, with gradcheck; the equality with sentence-transformers'
MultipleNegativesRankingLoss, written as it computes it; the modules; bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from contrastkit import losses
from contrastkit.losses.kernels import common
from tests.losses import _reference_negatives as ref

B, D, K, M = 5, 4, 3, 4
# the kernels (this folder's conftest sends every size there), the plain-autograd small path,
# and the chunked kernels
PATHS = ("kernel", "small", "chunked")


def _problem(form: str, seed: int = 0, dtype=torch.float64):
    """Views ``(B, D)`` and negatives: each anchor's own ``(B, K, D)``, a pool ``(M, D)``, or
    none."""
    generator = torch.Generator().manual_seed(seed)
    u, v = torch.randn(2, B, D, generator=generator, dtype=dtype)
    shape = {"own": (B, K, D), "pool": (M, D)}.get(form)
    negatives = None if shape is None else torch.randn(shape, generator=generator, dtype=dtype)
    return u, v, negatives


def _unit(x):
    return None if x is None else F.normalize(x, dim=-1)


def _options(path: str, monkeypatch) -> dict:
    """The options (and the threshold) that send a loss down ``path``."""
    if path == "small":
        monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 1 << 30)
    return {"chunk_size": 2} if path == "chunked" else {}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("direction", ["symmetric", "one_way"])
@pytest.mark.parametrize("form", ["own", "pool", "none"])
def test_info_nce_matches_the_loop(form, direction, path, monkeypatch):
    u, v, negatives = _problem(form)
    expected = ref.info_nce(_unit(u), _unit(v), _unit(negatives), 0.2, direction)
    got = losses.info_nce(u, v, 0.2, negatives=negatives, direction=direction,
                          **_options(path, monkeypatch))
    assert float(got) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("form", ["own", "pool"])
def test_siglip_matches_the_loop(form, path, monkeypatch):
    u, v, negatives = _problem(form, seed=1)
    expected = ref.sigmoid(_unit(u), _unit(v), _unit(negatives), scale=5.0, bias=-2.0)
    got = losses.siglip(u, v, scale=5.0, bias=-2.0, negatives=negatives,
                        **_options(path, monkeypatch))
    assert float(got) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("form", ["own", "pool"])
def test_the_kernels_gpu_choices_give_the_loops_values(form, chunk_size, monkeypatch):
    """With the choices the kernels make on a GPU (``kernels.common.accelerated``), on the CPU."""
    monkeypatch.setattr(common, "accelerated", lambda device: True)
    u, v, negatives = _problem(form, seed=11)
    unit = [_unit(x) for x in (u, v, negatives)]
    for direction in ("symmetric", "one_way"):
        got = losses.info_nce(u, v, 0.2, negatives=negatives, direction=direction,
                              chunk_size=chunk_size)
        assert float(got) == pytest.approx(ref.info_nce(*unit, 0.2, direction), rel=1e-12)
    got = losses.siglip(u, v, 5.0, -2.0, negatives=negatives, chunk_size=chunk_size)
    assert float(got) == pytest.approx(ref.sigmoid(*unit, 5.0, -2.0), rel=1e-12)


LABELS = torch.tensor([0, 1, 0, 2, 1])


@pytest.mark.parametrize("form", ["own", "pool"])
@pytest.mark.parametrize(("candidates", "psi", "hardening", "hardness"), [
    ("other_classes", "infonce_mean", "exponential", 3.0),
    ("all", "infonce_sum", "polynomial", 2.0),
    ("all_but_self", "triplet", "exponential", 0.0),
])
def test_hard_negative_losses_match_the_loop(form, candidates, psi, hardening, hardness):
    u, v, negatives = _problem(form, seed=2)
    hardness_option = {"beta" if hardening == "exponential" else "epsilon": hardness}
    got = losses.hard_negative_loss(
        u, v, LABELS, candidates=candidates, negatives=negatives, estimator="importance",
        psi=psi, k=6, alpha=0.5, temperature=0.7, hardening=hardening, **hardness_option)
    expected = ref.hard_negative_importance(
        _unit(u), _unit(v), LABELS, _unit(negatives), candidates=candidates, psi=psi, k=6,
        alpha=0.5, temperature=0.7, hardening=hardening, hardness=hardness)
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_explicit_negatives_are_the_only_candidates_of_a_single_class_batch():
    """With one class and ``candidates="other_classes"`` the batch offers no negative (an
    error without explicit ones); with them, every resampled negative is an explicit one."""
    u, v, negatives = _problem("own", seed=3)
    labels = torch.zeros(B, dtype=torch.int64)
    with pytest.raises(ValueError, match="without a negative candidate"):
        losses.scl(u, v, labels, k=4)
    drawn = []

    def psi(t):  # records the differences t_m = (z . n_m - z . z_p) / temperature
        drawn.append(t.detach())
        return F.softplus(torch.logsumexp(t, dim=-1))

    losses.scl(u, u, labels, k=4, psi=psi, negatives=negatives,
               generator=torch.Generator().manual_seed(0))
    z, n = _unit(u), _unit(negatives)
    own = torch.einsum("bd,bkd->bk", z, n)  # the explicit negatives' similarities
    pairs = (labels.unsqueeze(1) == labels.unsqueeze(0)).nonzero()
    allowed = own[pairs[:, 0]] - (z @ z.T)[pairs[:, 0], pairs[:, 1]].unsqueeze(1)
    found = drawn[0].unsqueeze(2) - allowed.unsqueeze(1)  # (pairs, k drawn, K allowed)
    assert bool((found.abs() < 1e-12).any(dim=2).all())


# ---- sentence-transformers' MultipleNegativesRankingLoss, as it computes it ----------------

def _multiple_negatives_ranking(anchors, positives, negatives, scale, symmetric=False):
    """sentence-transformers' MNRL on (anchor, positive, negative_1 .. negative_k) columns:
    ``cross_entropy(scale * cos(a, [p; n_1; ...; n_k]), arange(B))``; the symmetric loss adds
    the positives' cross-entropy against the anchors alone, and halves."""
    columns = [positives] + [negatives[:, m] for m in range(negatives.shape[1])]
    scores = _unit(anchors) @ _unit(torch.cat(columns)).T * scale
    labels = torch.arange(anchors.shape[0])
    forward = F.cross_entropy(scores, labels)
    if not symmetric:
        return forward
    return 0.5 * (forward + F.cross_entropy(scores[:, : anchors.shape[0]].T, labels))


@pytest.mark.parametrize("symmetric", [False, True])
def test_info_nce_is_multiple_negatives_ranking_loss_with_the_batch_negatives_as_a_pool(
        symmetric):
    anchors, positives, negatives = _problem("own", seed=4)
    expected = _multiple_negatives_ranking(anchors, positives, negatives, 20.0, symmetric)
    got = losses.info_nce(anchors, positives, temperature=1 / 20.0,
                          negatives=negatives.reshape(-1, D),
                          direction="symmetric" if symmetric else "one_way")
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


# ---- gradients ------------------------------------------------------------------------------

GRADCHECKED = {
    "info_nce": lambda u, v, n, s, **kw: losses.info_nce(u, v, 1 / s, negatives=n, **kw),
    "info_nce_one_way": lambda u, v, n, s, **kw: losses.info_nce(
        u, v, 1 / s, negatives=n, direction="one_way", **kw),
    "siglip": lambda u, v, n, s, **kw: losses.siglip(u, v, s, s - 4.0, negatives=n, **kw),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("form", ["own", "pool"])
@pytest.mark.parametrize("name", GRADCHECKED)
def test_gradcheck_views_negatives_and_scale(name, form, path, monkeypatch):
    """In float64 through the row normalization, with respect to the views, the negatives and
    a tensor scale (or inverse temperature; SigLIP's bias too)."""
    u, v, negatives = _problem(form, seed=5)
    scale = torch.tensor(3.0, dtype=torch.float64)
    inputs = tuple(x.requires_grad_() for x in (u, v, negatives, scale))
    options = _options(path, monkeypatch)
    assert torch.autograd.gradcheck(lambda *x: GRADCHECKED[name](*x, **options), inputs)


@pytest.mark.parametrize("form", ["own", "pool"])
def test_gradcheck_hard_negative_loss(form):
    u, v, negatives = _problem(form, seed=6)
    inputs = tuple(x.requires_grad_() for x in (u, v, negatives))

    def loss(a, b, n):
        return losses.hucl(a, b, LABELS, beta=2.0, estimator="importance", negatives=n)

    assert torch.autograd.gradcheck(loss, inputs)


# ---- the forms agree with each other and with the modules -----------------------------------

@pytest.mark.parametrize("name", ["info_nce", "siglip", "hucl"])
def test_a_pool_is_every_anchor_owning_all_of_it(name):
    u, v, pool = _problem("pool", seed=7)
    options = {"estimator": "importance"} if name == "hucl" else {}
    loss = getattr(losses, name)
    as_pool = loss(u, v, negatives=pool, **options)
    as_own = loss(u, v, negatives=pool.expand(B, M, D), **options)
    assert float(as_pool) == pytest.approx(float(as_own), rel=1e-12)


def test_the_modules_take_negatives_in_forward_and_compute():
    u, v, negatives = _problem("own", seed=8)
    pairs = [
        (losses.InfoNCE(0.2, direction="one_way"),
         losses.info_nce(u, v, 0.2, negatives=negatives, direction="one_way")),
        (losses.SigLIP(5.0, -2.0, chunk_size=2),
         losses.siglip(u, v, 5.0, -2.0, negatives=negatives)),
        (losses.HUCL(estimator="importance"),
         losses.hucl(u, v, estimator="importance", negatives=negatives)),
    ]
    for module, expected in pairs:
        assert module.supports_negatives
        assert float(module(u, v, negatives=negatives)) == pytest.approx(float(expected),
                                                                           rel=1e-12)
        assert float(module.compute(u, v, None, negatives).total) == pytest.approx(
            float(expected), rel=1e-12)
    assert repr(pairs[0][0]) == "InfoNCE(temperature=0.2, direction='one_way')"


def test_a_composite_gives_the_negatives_to_the_terms_that_take_them():
    u, v, negatives = _problem("pool", seed=9)
    loss = losses.InfoNCE(0.2) + 3 * losses.VRNS(n=50)
    assert loss.supports_negatives
    out = loss.compute(u, v, negatives=negatives)
    expected = {"info_nce": losses.info_nce(u, v, 0.2, negatives=negatives),
                "vrns": losses.vrns(u, v, n=50)}  # on the views alone
    for name, value in expected.items():
        assert float(out.parts[name]) == pytest.approx(float(value), rel=1e-12)
    assert float(loss(u, v, negatives=negatives)) == pytest.approx(float(out.total), rel=1e-12)


@pytest.mark.parametrize("name", ["info_nce", "siglip"])
def test_bfloat16_views_and_negatives_stay_close_to_float64(name):
    u, v, negatives = _problem("pool", seed=10)
    loss = getattr(losses, name)
    exact = loss(u, v, negatives=negatives)
    low = loss(u.bfloat16(), v.bfloat16(), negatives=negatives.bfloat16())
    assert bool(torch.isfinite(low))
    assert float(low) == pytest.approx(float(exact), rel=2e-2)


# ---- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize(("negatives", "message"), [
    (torch.zeros(M, D + 1, dtype=torch.float64), r"shape \(M, 4\).*got shape \(4, 5\)"),
    (torch.zeros(B + 1, K, D, dtype=torch.float64), r"\(5, k, 4\)"),
    (torch.zeros(B, 0, D, dtype=torch.float64), r"k >= 1"),
    (torch.zeros(0, D, dtype=torch.float64), r"M >= 1"),
    (torch.zeros(D, dtype=torch.float64), "negatives must have shape"),
    (torch.zeros(1, B, K, D, dtype=torch.float64), "negatives must have shape"),
    (torch.zeros(M, D, dtype=torch.int64), "floating-point"),
    (torch.zeros(M, D, dtype=torch.float32), r"dtype of v \(torch.float64\)"),
    (torch.zeros(M, D, dtype=torch.float64, device="meta"), "views' device"),
    (torch.full((M, D), torch.nan, dtype=torch.float64), "negatives contains NaN"),
    ([[0.0] * D] * M, "must be a torch.Tensor"),
])
@pytest.mark.parametrize("name", ["info_nce", "siglip", "hucl"])
def test_bad_negatives_are_named(name, negatives, message):
    u, v, _ = _problem("none")
    with pytest.raises(ValueError, match=message):
        getattr(losses, name)(u, v, negatives=negatives)


def test_bad_direction_and_losses_without_negatives_are_named():
    u, v, negatives = _problem("pool")
    with pytest.raises(ValueError, match="direction"):
        losses.info_nce(u, v, negatives=negatives, direction="both")
    with pytest.raises(ValueError, match="direction"):
        losses.InfoNCE(direction="backward")
    for loss in (losses.SimCLR(), losses.SimCLR() + losses.VRNS(n=50)):
        with pytest.raises(ValueError, match="negatives: the loss"):
            loss(u, v, negatives=negatives)
        with pytest.raises(ValueError, match="negatives: the loss"):
            loss.compute(u, v, negatives=negatives)


# ---- contrastkit.testing.check_loss on losses that make their negatives from their rows ------

def _own_of_rows(u, v):
    return torch.stack([u + v, u - 2 * v], dim=1)


def _pool_of_rows(u, v):
    return 0.5 * (u - v)


class _InfoNCEOwn(losses.InfoNCE):
    def forward(self, u, v, labels=None):
        return super().forward(u, v, negatives=_own_of_rows(u, v))


class _InfoNCEOneWayPool(losses.InfoNCE):
    def forward(self, u, v, labels=None):
        return super().forward(u, v, negatives=_pool_of_rows(u, v))


class _SigLIPPool(losses.SigLIP):
    def forward(self, u, v, labels=None):
        return super().forward(u, v, negatives=_pool_of_rows(u, v))


class _HUCLOwn(losses.HUCL):
    def forward(self, u, v, labels=None):
        return super().forward(u, v, negatives=_own_of_rows(u, v))


@pytest.mark.parametrize(("cls", "settings"), [
    (_InfoNCEOwn, {}), (_InfoNCEOneWayPool, {"direction": "one_way"}), (_SigLIPPool, {}),
    (_HUCLOwn, {"estimator": "importance"}),
])
def test_check_loss_passes_with_explicit_negatives(cls, settings):
    """Two processes (a pool gathered, each row's own kept with its row), gradcheck, chunking,
    a batch of one, a NaN and bfloat16."""
    from contrastkit.testing import check_loss

    result = check_loss(cls, settings, world_sizes=(2,), verbose=False)
    assert result.passed, result.summary()
