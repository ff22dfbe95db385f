"""Shared fixtures: seeded random views."""

from __future__ import annotations

import pytest
import torch


def random_views(batch: int, dim: int, seed: int = 0, dtype=torch.float64, normalized=False):
    """Two seeded random views of shape (batch, dim); rows unit-norm when ``normalized``."""
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator, dtype=dtype)
    v = torch.randn(batch, dim, generator=generator, dtype=dtype)
    if normalized:
        u = torch.nn.functional.normalize(u, dim=1)
        v = torch.nn.functional.normalize(v, dim=1)
    return u, v


@pytest.fixture
def views():
    return random_views
