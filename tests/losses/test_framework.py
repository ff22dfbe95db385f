"""The unified framework: Def. 3.1 / 3.2 against loops, and Remark 3.3 (named losses are
instances of the generic forms with their Table 2 / Table 3 rows)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from contrastkit import losses
from tests.conftest import random_views
from tests.losses import _reference as ref

C1_C2 = [(0, 1), (1, 0), (1, 1)]


def _exp_phi(t):
    return (lambda x: torch.exp(x / t)), (lambda x: math.exp(x / t))


@pytest.mark.parametrize("c1,c2", C1_C2)
@pytest.mark.parametrize("batch,dim", [(2, 3), (6, 4)])
def test_info_sym_matches_def_3_1_loop(c1, c2, batch, dim):
    u, v = random_views(batch, dim, seed=batch + c1 + 2 * c2)
    phi_t, phi_s = _exp_phi(0.3)
    # a psi that is neither of Table 2's, to exercise the generic path
    psi_t, psi_s = (lambda x: torch.sqrt(1 + x)), (lambda x: math.sqrt(1 + x))
    expected = ref.info_sym(F.normalize(u, dim=1), F.normalize(v, dim=1), phi_s, psi_s, c1, c2)
    value = losses.info_sym(u, v, phi_t, psi_t, c1, c2)
    assert float(value) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("c1,c2", C1_C2)
@pytest.mark.parametrize("batch,n", [(2, 2), (5, 5), (5, 40)])
def test_ind_add_matches_def_3_2_loop(c1, c2, batch, n):
    u, v = random_views(batch, 4, seed=batch + n)
    phi_t, phi_s = (lambda x: -torch.exp(-x)), (lambda x: -math.exp(-x))
    psi_t, psi_s = (lambda x: torch.exp(2 * x)), (lambda x: math.exp(2 * x))
    expected = ref.ind_add(F.normalize(u, dim=1), F.normalize(v, dim=1), phi_s, psi_s, c1, c2, n)
    value = losses.ind_add(u, v, phi_t, psi_t, c1, c2, n)
    assert float(value) == pytest.approx(expected, rel=1e-12)


TABLE_2 = [
    ("info_nce", losses.info_nce, torch.log1p, 1, 0),
    ("simclr", losses.simclr, torch.log1p, 1, 1),
    ("dcl", losses.dcl, torch.log, 1, 1),
    ("dhel", losses.dhel, torch.log, 0, 1),
]


@pytest.mark.parametrize("name,loss,psi,c1,c2", TABLE_2, ids=[row[0] for row in TABLE_2])
@pytest.mark.parametrize("temperature", [0.1, 0.5])
def test_remark_3_3_table_2_rows(name, loss, psi, c1, c2, temperature):
    u, v = random_views(8, 5, seed=17)
    phi = lambda x: torch.exp(x / temperature)  # noqa: E731
    generic = losses.info_sym(u, v, phi, psi, c1, c2)
    assert float(loss(u, v, temperature=temperature)) == pytest.approx(float(generic), rel=1e-12)


def _siglip_row(t, b, n):
    """Table 3's SigLIP row: phi = -log(1 + exp(-t x + b)), psi = (n-1) log(1 + exp(t x - b))."""
    return (lambda x: -F.softplus(-t * x + b)), (lambda x: (n - 1) * F.softplus(t * x - b))


@pytest.mark.parametrize("scale,bias", [(10.0, -10.0), (2.0, 1.0)])
def test_remark_3_3_table_3_siglip_row(scale, bias):
    u, v = random_views(7, 5, seed=19)
    phi, psi = _siglip_row(t=scale, b=-bias, n=7)
    generic = losses.ind_add(u, v, phi, psi, 1, 0, n=7)
    assert float(losses.siglip(u, v, scale=scale, bias=bias)) == pytest.approx(
        float(generic), rel=1e-12
    )


def test_remark_3_3_table_3_spectral_row():
    u, v = random_views(7, 5, seed=23)
    generic = losses.ind_add(u, v, lambda x: x, torch.square, 1, 0, n=7)
    assert float(losses.spectral(u, v)) == pytest.approx(float(generic), rel=1e-12)


@pytest.mark.parametrize("n", [8, 20, 1000])
def test_ind_add_siglip_scales_as_batch_over_dataset_size(n):
    """With psi carrying (n-1), Def. 3.2 normalizes a batch of B by n: it is (B/n) * siglip."""
    u, v = random_views(8, 5, seed=29)
    phi, psi = _siglip_row(t=10.0, b=10.0, n=n)
    generic = losses.ind_add(u, v, phi, psi, 1, 0, n=n)
    expected = 8 / n * losses.siglip(u, v, scale=10.0, bias=-10.0)
    assert float(generic) == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("c1,c2", C1_C2)
def test_ind_add_is_additive_over_fixed_mini_batches(c1, c2):
    """Summing Def. 3.2 over the batches of a partition of [n] gives the full-batch loss minus the
    negative terms of pairs that straddle two batches (the sense of "independently additive")."""
    n, m = 9, 3
    u, v = random_views(n, 4, seed=31, normalized=True)
    phi, psi = (lambda x: x), torch.square
    batches = [slice(k, k + m) for k in range(0, n, m)]
    summed = sum(losses.ind_add(u[b], v[b], phi, psi, c1, c2, n=n) for b in batches)
    full = losses.ind_add(u, v, phi, psi, c1, c2, n=n)
    block = torch.arange(n) // m
    straddling = block[:, None] != block[None, :]
    cross_terms = (
        c1 * psi(u @ v.T)[straddling].sum() / (n * (n - 1))
        + c2 * (psi(u @ u.T) + psi(v @ v.T))[straddling].sum() / (2 * n * (n - 1))
    )
    assert float(summed) == pytest.approx(float(full - cross_terms), rel=1e-12)


def test_generic_forms_raise_instead_of_returning_overflow():
    u, v = random_views(4, 3, seed=1, dtype=torch.float32)
    phi = lambda x: torch.exp(x / 0.001)  # noqa: E731  (overflows float32)
    with pytest.raises(FloatingPointError, match="overflowed"):
        losses.info_sym(u, v, phi, torch.log1p, 1, 0)
    with pytest.raises(FloatingPointError, match="overflowed"):
        losses.ind_add(u, v, lambda x: x, phi, 1, 0, n=4)
