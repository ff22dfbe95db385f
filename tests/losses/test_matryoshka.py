"""Matryoshka (``losses.matryoshka``, ``losses.Matryoshka``): any loss on nested prefixes of the
embedding, against a float64 loop over the prefixes and the pairs (each prefix normalized on its
own), through the kernels, the small-matrix path and the chunked path, with explicit negatives
and InfoNCE's one-way form; gradcheck; the parts; composition; bad input."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F

from contrastkit import losses
from contrastkit.losses.kernels import common
from contrastkit.losses.learnable import learned_settings
from tests.losses import _reference_negatives as ref

B, D, K, M = 5, 6, 3, 4
DIMS, WEIGHTS = (2, 3, 6), (1.0, 0.5, 2.0)
PATHS = ("kernel", "small", "chunked")


def _problem(form: str, seed: int = 0):
    """Views ``(B, D)`` and negatives (each anchor's own ``(B, K, D)``, a pool ``(M, D)`` or
    none), float64."""
    generator = torch.Generator().manual_seed(seed)
    u, v = torch.randn(2, B, D, generator=generator, dtype=torch.float64)
    shape = {"own": (B, K, D), "pool": (M, D)}.get(form)
    negatives = None if shape is None else torch.randn(shape, generator=generator,
                                                       dtype=torch.float64)
    return u, v, negatives


def _options(path: str, monkeypatch) -> dict:
    """The wrapped loss's options (and the threshold) that send it down ``path``."""
    if path == "small":
        monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 1 << 30)
    return {"chunk_size": 2} if path == "chunked" else {}


def _reference(formula, u, v, negatives, dims=DIMS, weights=WEIGHTS):
    """``sum_m w_m formula(prefixes)``, each prefix of the views and negatives cut and then
    L2-normalized on its own, the formula a loop over the pairs."""
    total = 0.0
    for dim, weight in zip(dims, weights, strict=True):
        def unit(x, dim=dim):
            return None if x is None else F.normalize(x[..., :dim], dim=-1)

        total += weight * formula(unit(u), unit(v), unit(negatives))
    return total


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("direction", ["symmetric", "one_way"])
@pytest.mark.parametrize("form", ["own", "pool", "none"])
def test_info_nce_on_the_prefixes_matches_the_loop(form, direction, path, monkeypatch):
    u, v, negatives = _problem(form)
    expected = _reference(lambda a, b, n: ref.info_nce(a, b, n, 0.2, direction), u, v, negatives)
    loss = losses.InfoNCE(0.2, direction=direction, **_options(path, monkeypatch))
    module = losses.Matryoshka(loss, DIMS, WEIGHTS)
    function = losses.matryoshka(u, v, loss, DIMS, WEIGHTS, negatives=negatives)
    assert float(module(u, v, negatives=negatives)) == pytest.approx(expected, rel=1e-12)
    assert float(function) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("form", ["own", "pool", "none"])
def test_siglip_on_the_prefixes_matches_the_loop(form, path, monkeypatch):
    u, v, negatives = _problem(form, seed=1)
    expected = _reference(lambda a, b, n: ref.sigmoid(a, b, n, 5.0, -2.0), u, v, negatives)
    loss = losses.SigLIP(5.0, -2.0, **_options(path, monkeypatch))
    got = losses.Matryoshka(loss, DIMS, WEIGHTS).compute(u, v, negatives=negatives).total
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_the_function_takes_any_loss_function_and_weights_one_by_default():
    u, v, negatives = _problem("own", seed=2)
    loss = functools.partial(losses.info_nce, temperature=0.3)
    expected = _reference(lambda a, b, n: ref.info_nce(a, b, n, 0.3, "symmetric"), u, v,
                          negatives, weights=(1.0, 1.0, 1.0))
    got = losses.matryoshka(u, v, loss, DIMS, negatives=negatives)
    assert float(got) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("name", "form"), [("info_nce", "own"), ("info_nce_one_way", "pool"),
                                            ("siglip", "pool"), ("simclr", "none")])
def test_gradcheck_views_negatives_and_a_shared_scale(name, form, path, monkeypatch):
    """In float64 through each prefix's normalization, with respect to the views, the negatives
    and one tensor scale shared by every prefix."""
    u, v, negatives = _problem(form, seed=3)
    options = _options(path, monkeypatch)
    wrapped = {
        "info_nce": lambda s: functools.partial(losses.info_nce, temperature=1 / s, **options),
        "info_nce_one_way": lambda s: functools.partial(
            losses.info_nce, temperature=1 / s, direction="one_way", **options),
        "siglip": lambda s: functools.partial(losses.siglip, scale=s, bias=s - 4.0, **options),
        "simclr": lambda s: functools.partial(losses.simclr, temperature=1 / s, **options),
    }[name]
    scale = torch.tensor(3.0, dtype=torch.float64)
    inputs = [u, v, scale] + ([] if negatives is None else [negatives])
    for x in inputs:
        x.requires_grad_()

    def loss(a, b, s, n=None):
        return losses.matryoshka(a, b, wrapped(s), DIMS, WEIGHTS, negatives=n)

    assert torch.autograd.gradcheck(loss, tuple(inputs))


def test_the_parts_are_each_prefix_and_term_weighted_to_the_total():
    u, v, _ = _problem("none", seed=4)
    inner = losses.SimCLR(0.2) + 3.0 * losses.VRNS(n=100)
    output = losses.Matryoshka(inner, DIMS, WEIGHTS).compute(u, v)
    names = [f"{part}@{dim}" for dim in DIMS for part in ("simclr", "vrns")]
    assert list(output.parts) == names
    assert losses.Matryoshka(inner, DIMS, WEIGHTS).part_names == names
    assert output.weights["vrns@3"] == pytest.approx(0.5 * 3.0)
    weighted = sum(output.weights[n] * output.parts[n] for n in names)
    torch.testing.assert_close(output.total, weighted, rtol=1e-12, atol=0)
    for dim in DIMS:  # each part is the term on that prefix alone
        expected = losses.simclr(u[:, :dim], v[:, :dim], 0.2)
        torch.testing.assert_close(output.parts[f"simclr@{dim}"], expected, rtol=1e-12, atol=0)


def test_each_prefix_is_normalized_on_its_own():
    """Scaling the coordinates past a prefix changes nothing of that prefix's part: the loss
    sees the prefix's unit vectors, not the prefix of the full unit vector."""
    u, v, _ = _problem("none", seed=5)
    loss = losses.Matryoshka(losses.InfoNCE(0.2), (2, D))
    stretched = torch.cat([u[:, :2], 100.0 * u[:, 2:]], dim=1)
    before, after = loss.compute(u, v).parts, loss.compute(stretched, v).parts
    torch.testing.assert_close(after["info_nce@2"], before["info_nce@2"], rtol=1e-12, atol=0)
    assert float((after["info_nce@6"] - before["info_nce@6"]).abs()) > 1e-3


def test_a_learnable_temperature_is_one_parameter_shared_by_the_prefixes():
    u, v, negatives = _problem("own", seed=6)
    module = losses.Matryoshka(losses.InfoNCE(0.2, learnable=True), DIMS, WEIGHTS)
    assert [name for name, _ in module.named_parameters()] == ["loss.logit_scale"]
    module(u, v, negatives=negatives).backward()
    logit_scale = torch.tensor(float(module.loss.logit_scale.detach()), dtype=torch.float64,
                               requires_grad=True)
    by_hand = losses.matryoshka(u, v, functools.partial(
        losses.info_nce, temperature=logit_scale.exp().reciprocal()), DIMS, WEIGHTS,
        negatives=negatives)
    by_hand.backward()
    torch.testing.assert_close(module.loss.logit_scale.grad.double(), logit_scale.grad,
                               rtol=1e-6, atol=1e-9)
    assert learned_settings(module) == {"temperature": pytest.approx(0.2)}


def test_in_a_sum_of_losses_it_takes_the_negatives_and_labels_of_its_loss():
    u, v, negatives = _problem("pool", seed=7)
    labels = torch.tensor([0, 1, 0, 2, 1])
    objective = losses.Matryoshka(losses.InfoNCE(0.2), DIMS) + 2.0 * losses.VRNS(n=100)
    output = objective.compute(u, v, negatives=negatives)
    alone = losses.Matryoshka(losses.InfoNCE(0.2), DIMS).compute(u, v, negatives=negatives)
    torch.testing.assert_close(output.parts["matryoshka"], alone.total, rtol=1e-12, atol=0)
    supervised = losses.Matryoshka(losses.SupCon(0.2), DIMS)
    assert supervised.uses_labels
    expected = sum(losses.supcon(u[:, :d], v[:, :d], labels, 0.2) for d in DIMS)
    torch.testing.assert_close(supervised(u, v, labels), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("dims", "weights", "message"), [
    ((), None, "dims must be a non-empty sequence"),
    ("64", None, "dims must be a non-empty sequence"),
    ((2, 2, 4), None, "dims must be strictly increasing"),
    ((4, 2), None, "dims must be strictly increasing"),
    ((0, 2), None, r"dims must hold integers >= 1"),
    ((2.0, 4), None, r"dims must hold integers >= 1"),
    ((True, 4), None, r"dims must hold integers >= 1"),
    ((2, 4), (1.0,), "weights must hold one weight per dimension of dims"),
    ((2, 4), (1.0, 0.0), "weights must hold finite numbers > 0"),
    ((2, 4), (1.0, -1.0), "weights must hold finite numbers > 0"),
    ((2, 4), (1.0, float("nan")), "weights must hold finite numbers > 0"),
    ((2, 4), 1.0, "weights must be a sequence"),
])
def test_bad_dims_and_weights_raise_value_errors_naming_them(dims, weights, message):
    with pytest.raises(ValueError, match=message):
        losses.Matryoshka(losses.InfoNCE(), dims, weights)
    u, v, _ = _problem("none")
    with pytest.raises(ValueError, match=message):
        losses.matryoshka(u, v, losses.info_nce, dims, weights)


def test_bad_input_at_the_call_raises_value_errors():
    u, v, negatives = _problem("own")
    too_wide = losses.Matryoshka(losses.InfoNCE(), (2, D + 1))
    with pytest.raises(ValueError, match=r"dims must be at most the embedding dimension 6"):
        too_wide(u, v)
    with pytest.raises(ValueError, match=r"dims must be at most the embedding dimension 6"):
        losses.matryoshka(u, v, losses.info_nce, (2, D + 1))
    wrapped = losses.Matryoshka(losses.InfoNCE(), DIMS)
    with pytest.raises(ValueError, match="negatives"):  # another width: not hidden by the cut
        wrapped(u, v, negatives=torch.cat([negatives, negatives], dim=-1))
    with pytest.raises(ValueError, match="negatives: the loss 'matryoshka'"):
        losses.Matryoshka(losses.SimCLR(), DIMS)(u, v, negatives=negatives)
    with pytest.raises(ValueError, match="u and v must"):
        wrapped(u, v[:, :4])
    with pytest.raises(ValueError, match="loss must be a contrastkit.losses.ContrastiveLoss"):
        losses.Matryoshka(losses.info_nce, DIMS)  # type: ignore[arg-type]
