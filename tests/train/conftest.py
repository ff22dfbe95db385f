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


@pytest.fixture(scope="module")
def no_curves():
    """The module's runs draw no curves.png (half of a tiny run's time), for tests that do
    not look at it."""
    import contrastkit.train.loop as loop

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "plot_run", lambda *args: None)
        yield
