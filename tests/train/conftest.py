"""Fixtures shared by the training tests."""

import pytest
import torch


@pytest.fixture
def float64():
    """Run the test's own process in float64 (spawned workers set it themselves)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)
