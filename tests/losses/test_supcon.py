"""SupCon (Khosla et al. 2020, eq. 2): loop reference, the SimCLR identity, anchors without
positives, gradients, bad input."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from tests.losses._reference_family import supcon_reference


def views(seed, batch=8, dim=5, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, dim, generator=g, dtype=dtype),
            torch.randn(batch, dim, generator=g, dtype=dtype))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0])
def test_two_views_match_loop_reference(seed, temperature):
    u, v = views(seed)
    labels = torch.tensor([0, 1, 0, 2, 1, 1, 3, 0])
    got = losses.supcon(u, v, labels, temperature=temperature)
    assert got.item() == pytest.approx(supcon_reference(u, v, labels, temperature), rel=1e-12)


def test_without_normalization_matches_reference():
    u, v = views(3)
    u, v = 0.3 * u, 0.3 * v
    labels = torch.tensor([0, 1, 0, 1, 2, 2, 3, 3])
    got = losses.supcon(u, v, labels, temperature=0.5, normalize=False)
    expected = supcon_reference(u, v, labels, 0.5, normalize=False)
    assert got.item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("temperature", [0.05, 0.2, 1.0])
def test_all_distinct_labels_is_simclr(temperature):
    u, v = views(1, batch=10)
    labels = torch.arange(10) * 7  # any distinct ids
    got = losses.supcon(u, v, labels, temperature=temperature)
    assert got.item() == pytest.approx(losses.simclr(u, v, temperature).item(), rel=1e-12)


def test_shared_labels_differ_from_simclr():
    u, v = views(2)
    labels = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    assert losses.supcon(u, v, labels, 0.2).item() != pytest.approx(
        losses.simclr(u, v, 0.2).item(), rel=1e-3)


def test_single_view_excludes_anchors_without_positive():
    u, _ = views(5)
    labels = torch.tensor([0, 0, 1, 2, 2, 2, 3, 4])  # classes 1, 3, 4 appear once
    got = losses.supcon(u, None, labels, temperature=0.3)
    assert got.item() == pytest.approx(supcon_reference(u, None, labels, 0.3), rel=1e-12)
    assert torch.isfinite(got)
    # the singletons still act as negatives: moving one changes the loss
    moved = u.clone()
    moved[3] = -moved[0]
    assert losses.supcon(moved, None, labels, 0.3).item() != pytest.approx(got.item())


def test_single_view_no_positive_policies_raise():
    u, _ = views(6)
    labels = torch.tensor([0, 0, 1, 2, 2, 2, 3, 4])
    with pytest.raises(ValueError, match="labels"):
        losses.supcon(u, None, labels, no_positive="raise")
    with pytest.raises(ValueError, match="no anchor a positive"):
        losses.supcon(u, None, torch.arange(8))


def test_single_view_all_positive_matches_reference():
    u, _ = views(7)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 2, 0])
    got = losses.supcon(u, None, labels, temperature=0.1, no_positive="raise")
    assert got.item() == pytest.approx(supcon_reference(u, None, labels, 0.1), rel=1e-12)


def test_gradcheck():
    u, v = views(8, batch=6, dim=4)
    u.requires_grad_(True)
    v.requires_grad_(True)
    labels = torch.tensor([0, 1, 0, 2, 1, 2])
    assert torch.autograd.gradcheck(lambda a, b: losses.supcon(a, b, labels, 0.5), (u, v))


def test_gradcheck_single_view():
    u, _ = views(9, batch=6, dim=4)
    u.requires_grad_(True)
    labels = torch.tensor([0, 1, 0, 3, 1, 2])
    assert torch.autograd.gradcheck(lambda a: losses.supcon(a, None, labels, 0.5), (u,))


def test_float32_stable_at_low_temperature():
    u, v = views(10, dtype=torch.float32)
    labels = torch.tensor([0, 1, 0, 2, 1, 1, 3, 0])
    got = losses.supcon(u, v, labels, temperature=0.01)
    expected = losses.supcon(u.double(), v.double(), labels, temperature=0.01)
    assert torch.isfinite(got)
    assert got.item() == pytest.approx(expected.item(), rel=1e-4)


def test_module_uses_labels_and_composes():
    u, v = views(11)
    labels = torch.tensor([0, 1, 0, 2, 1, 1, 3, 0])
    module = losses.SupCon(temperature=0.2)
    assert module.uses_labels and module.name == "supcon"
    assert module(u, v, labels).item() == pytest.approx(
        losses.supcon(u, v, labels, 0.2).item(), rel=1e-12)
    out = (module + 0.5 * losses.SimCLR(0.2)).compute(u, v, labels)
    assert set(out.parts) == {"supcon", "simclr"}
    with pytest.raises(ValueError, match="labels"):
        module(u, v)


@pytest.mark.parametrize(
    "labels, match",
    [
        (torch.tensor([0, 1, 0, 1, 2, 2, 3]), "length 7"),
        (torch.tensor([0.0, 1, 0, 1, 2, 2, 3, 3]), "integer"),
        (torch.tensor([[0, 1, 0, 1, 2, 2, 3, 3]]), "1-D"),
        ([0.5, 1, 0, 1, 2, 2, 3, 3], "integer"),
        ("abcdefgh", "sequence of integer class ids"),
        (torch.ones(8, dtype=torch.bool), "integer"),
    ],
)
def test_bad_labels(labels, match):
    u, v = views(12)
    with pytest.raises(ValueError, match="labels") as info:
        losses.supcon(u, v, labels)
    assert match in str(info.value)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"temperature": 0.0}, "temperature"), ({"temperature": -1.0}, "temperature"),
     ({"no_positive": "zero"}, "no_positive")],
)
def test_bad_options(kwargs, name):
    u, v = views(13)
    labels = torch.arange(8)
    with pytest.raises(ValueError, match=name):
        losses.supcon(u, v, labels, **kwargs)
    with pytest.raises(ValueError, match=name):
        losses.SupCon(**kwargs)


def test_bad_views():
    u, v = views(14)
    with pytest.raises(ValueError, match="same shape"):
        losses.supcon(u, v[:4], torch.arange(8))
    bad = u.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        losses.supcon(bad, v, torch.arange(8))
