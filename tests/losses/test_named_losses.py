"""Each named loss equals a loop written straight from the paper's formula (float64)."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

from contrastkit import losses
from tests.conftest import random_views
from tests.losses import _reference as ref

SIZES = [(2, 3), (5, 4), (9, 16)]
TEMPERATURES = [0.05, 0.2, 1.0]

EXP_LOSSES = [
    (losses.info_nce, ref.info_nce),
    (losses.simclr, ref.simclr),
    (losses.dcl, ref.dcl),
    (losses.dhel, ref.dhel),
]


@pytest.mark.parametrize("batch,dim", SIZES)
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("loss,reference", EXP_LOSSES, ids=lambda f: getattr(f, "__name__", ""))
def test_exponential_losses_match_loop_reference(loss, reference, batch, dim, temperature):
    u, v = random_views(batch, dim, seed=batch * 31 + dim)
    expected = reference(F.normalize(u, dim=1), F.normalize(v, dim=1), temperature)
    assert float(loss(u, v, temperature=temperature)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("batch,dim", SIZES)
@pytest.mark.parametrize("scale,bias", [(10.0, -10.0), (1.0, 0.0), (5.0, 3.0)])
def test_siglip_matches_eq9_with_t_scale_and_b_minus_bias(batch, dim, scale, bias):
    u, v = random_views(batch, dim, seed=batch + 7)
    un, vn = F.normalize(u, dim=1), F.normalize(v, dim=1)
    expected = ref.sigmoid(un, vn, t=scale, b=-bias)
    assert float(losses.siglip(u, v, scale=scale, bias=bias)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("batch,dim", [*SIZES, (40, 3)])  # B <= 2d: u v^T; B > 2d: Gram
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_spectral_matches_table3_form(batch, dim, dtype):
    u, v = random_views(batch, dim, seed=batch + 11)
    expected = ref.spectral(F.normalize(u, dim=1), F.normalize(v, dim=1))
    u, v = u.to(dtype).requires_grad_(), v.to(dtype).requires_grad_()
    value = losses.spectral(u, v)
    tolerance = 1e-10 if dtype == torch.float64 else 1e-5
    assert value.dtype == dtype
    assert float(value.detach()) == pytest.approx(expected, rel=tolerance, abs=tolerance)
    if dtype == torch.float64:
        assert torch.autograd.gradcheck(losses.spectral, (u, v))


@pytest.mark.parametrize("batch,dim", [*SIZES, (40, 3)])  # B < 2d: pairs; B > 2d: Gram
@pytest.mark.parametrize("n", [None, 100, 50_000])
@pytest.mark.parametrize("within_view", [False, True])
def test_vrns_matches_def_5_7(batch, dim, n, within_view):
    u, v = random_views(batch, dim, seed=batch + 13)
    n = batch if n is None else n
    expected = ref.vrns(F.normalize(u, dim=1), F.normalize(v, dim=1), n, within_view=within_view)
    value = losses.vrns(u, v, n=n, within_view=within_view)
    assert float(value) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("rows,columns,dim", [(6, 6, 8), (40, 40, 3), (5, 15, 6), (5, 15, 2)])
def test_both_ways_of_summing_vrns_pairs_match_the_pair_loop(rows, columns, dim):
    """(6, 6, 8) and (5, 15, 6) take the B x B similarities, the others the Gram matrices;
    the own pairs sit at columns 7, ..., 7 + rows - 1 (a process's rows in a global batch)."""
    from contrastkit.losses.kernels.squared_sums import off_diagonal_squared_sum

    generator = torch.Generator().manual_seed(rows + dim)
    x = torch.randn(rows, dim, generator=generator, dtype=torch.float64)
    y = torch.randn(max(columns, rows + 7), dim, generator=generator, dtype=torch.float64)
    expected = sum((float(x[a] @ y[k]) + 0.01) ** 2
                   for a in range(rows) for k in range(y.shape[0]) if k != a + 7)
    found = off_diagonal_squared_sum(x, y, y[7:7 + rows], 0.01, first_column=7)
    assert float(found) == pytest.approx(expected, rel=1e-12)


def test_vrns_equals_variance_plus_squared_bias_of_negative_similarities():
    u, v = random_views(12, 6, seed=3, normalized=True)
    n = 40
    negatives = (u @ v.T)[~torch.eye(12, dtype=torch.bool)]
    decomposition = negatives.var(correction=0) + (negatives.mean() + 1 / (n - 1)) ** 2
    assert float(losses.vrns(u, v, n=n)) == pytest.approx(float(decomposition), rel=1e-12)


@pytest.mark.parametrize(
    "loss",
    [losses.info_nce, losses.simclr, losses.dcl, losses.dhel, losses.siglip, losses.spectral,
     lambda u, v, **kw: losses.vrns(u, v, n=1000, **kw)],
)
def test_normalize_false_uses_rows_as_given(loss):
    u, v = random_views(6, 5, seed=5)
    scaled_u, scaled_v = 3.0 * u, 0.5 * v
    # normalize=True ignores row norms ...
    assert float(loss(scaled_u, scaled_v)) == pytest.approx(float(loss(u, v)), rel=1e-12)
    # ... normalize=False on unit rows is the same loss; on raw rows it differs
    un, vn = F.normalize(u, dim=1), F.normalize(v, dim=1)
    assert float(loss(un, vn, normalize=False)) == pytest.approx(float(loss(u, v)), rel=1e-12)
    assert float(loss(scaled_u, scaled_v, normalize=False)) != pytest.approx(float(loss(u, v)))


def test_losses_are_symmetric_in_the_two_views():
    u, v = random_views(7, 5, seed=9)
    for loss in (losses.info_nce, losses.simclr, losses.dcl, losses.dhel, losses.siglip,
                 losses.spectral):
        assert float(loss(u, v)) == pytest.approx(float(loss(v, u)), rel=1e-12)


def test_modules_equal_functions_with_their_defaults():
    u, v = random_views(6, 4, seed=2)
    pairs = [
        (losses.InfoNCE(), losses.info_nce(u, v, temperature=0.1)),
        (losses.SimCLR(), losses.simclr(u, v, temperature=0.2)),
        (losses.DCL(), losses.dcl(u, v, temperature=0.1)),
        (losses.DHEL(), losses.dhel(u, v, temperature=0.1)),
        (losses.SigLIP(), losses.siglip(u, v, scale=10.0, bias=-10.0)),
        (losses.Spectral(), losses.spectral(u, v)),
        (losses.VRNS(n=50), losses.vrns(u, v, n=50)),
        (losses.SimCLR(temperature=0.5), losses.simclr(u, v, temperature=0.5)),
    ]
    for module, expected in pairs:
        assert float(module(u, v)) == pytest.approx(float(expected), rel=1e-12), module


@pytest.mark.parametrize("loss", [loss for loss, _ in EXP_LOSSES], ids=lambda f: f.__name__)
def test_exp_family_functions_keep_their_public_surface(loss):
    """The four members are built from one table row each: each still has its own name,
    docstring (its Table 2 row and the options' note) and the full keyword-only signature."""
    assert getattr(losses, loss.__name__) is loss
    assert "Table 2 row" in loss.__doc__ and "chunk_size" in loss.__doc__
    parameters = inspect.signature(loss).parameters
    assert list(parameters)[:4] == ["u", "v", "temperature", "normalize"]
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
               for name in ("chunk_size", "distributed"))
    assert loss.__name__ in losses.names()
    assert losses.get(loss.__name__).loss_fn is loss
