"""The share of pairs inside LMCL's margin band, against a loop over the pairs."""

from __future__ import annotations

import pytest
import torch

from contrastkit.geometry import margin_fraction


def _by_loop(u, delta_plus, delta_minus, v=None):
    u = torch.nn.functional.normalize(u.double(), dim=1)
    other = u if v is None else torch.nn.functional.normalize(v.double(), dim=1)
    pairs = [(i, j) for i in range(len(u)) for j in range(len(u))
             if (i < j if v is None else i != j)]
    inside = [delta_plus < (1 - float(u[i] @ other[j])) / 2 < delta_minus for i, j in pairs]
    return sum(inside) / len(pairs)


@pytest.mark.parametrize("two_views", [False, True])
@pytest.mark.parametrize("block_size", [3, 512])
def test_margin_fraction_counts_the_pairs_strictly_inside_the_band(two_views, block_size):
    generator = torch.Generator().manual_seed(7)
    u = torch.randn(23, 3, generator=generator)
    v = torch.randn(23, 3, generator=generator) if two_views else None
    assert margin_fraction(u, 0.2, 0.6, v=v, block_size=block_size) == pytest.approx(
        _by_loop(u, 0.2, 0.6, v), abs=1e-15)


def test_one_hot_classes_leave_the_default_band_empty():
    u = torch.eye(3).repeat(4, 1)  # intra-class D = 0, inter-class D = 0.5 (Theorem 2)
    assert margin_fraction(u) == 0.0


def test_bad_band_names_the_thresholds():
    with pytest.raises(ValueError, match="delta_plus must be < delta_minus"):
        margin_fraction(torch.randn(4, 2), 0.5, 0.1)
