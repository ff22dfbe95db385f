"""The tests of this folder exercise the hand-written kernels at every size: below
``PLAIN_AUTOGRAD_ENTRIES`` matrix entries the losses would otherwise take the plain-autograd
path, which ``test_small_matrix_path.py`` tests on its own (it overrides this fixture)."""

from __future__ import annotations

import pytest

from contrastkit.losses.kernels import common


@pytest.fixture(autouse=True)
def kernels_at_every_size(monkeypatch):
    monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
