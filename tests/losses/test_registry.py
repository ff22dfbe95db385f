"""The loss registry: every loss's declared capabilities hold, and a loss registered from
outside the package works wherever a loss name is accepted."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import registry
from tests.conftest import random_views

LABELS = torch.tensor([0, 1, 0, 2, 1, 2])


def _value(loss, u, v):
    return loss(u, v, LABELS if loss.uses_labels else None)


@pytest.fixture
def scratch_registry(monkeypatch):
    """A copy of the registry for the test, so registrations do not leak into other tests."""
    monkeypatch.setattr(registry.LOSSES, "_entries", dict(registry.LOSSES._entries))


@pytest.mark.parametrize("name", losses.names(regularizers=True))
def test_each_declared_capability_holds(name):
    cls = losses.get(name)
    assert cls.name == name
    u, v = random_views(6, 5)
    settings = {"n": 100}
    plain = losses.build(name, settings)
    assert type(plain) is cls
    if cls.supports_chunking:
        chunked = losses.build(name, settings, chunk_size=2)
        assert torch.allclose(_value(chunked, u, v), _value(plain, u, v), atol=1e-12)
    else:
        with pytest.raises(TypeError):
            cls(chunk_size=2, **{k: val for k, val in settings.items()
                                 if k in cls.hyperparameters})
    if cls.supports_distributed:  # without a process group, the share is the whole loss
        shared = losses.build(name, settings, distributed=True)
        assert shared.distributed and torch.allclose(_value(shared, u, v), _value(plain, u, v))
    if cls.uses_labels:
        with pytest.raises(ValueError, match="labels"):
            plain(u, v)
    if cls.training_options:
        losses.build(name, settings, **cls.training_options)
    assert set(plain.settings()) == set(cls.hyperparameters)
    assert losses.build(name, {**settings, **plain.settings()}).settings() == plain.settings()


def test_names_lists_regularizers_only_when_asked():
    assert {"vrns", "polarization"} <= set(losses.names(regularizers=True))
    assert not {"vrns", "polarization"} & set(losses.names())
    assert losses.names() == tuple(sorted(losses.names()))


def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(ValueError, match="loss must be one of .*simclr.*; got 'simclrr'"):
        losses.get("simclrr")


def test_register_refuses_bad_names_non_losses_clashes_and_undeclared_arguments(
        scratch_registry):
    with pytest.raises(ValueError, match="identifier"):
        losses.register("my loss")
    with pytest.raises(ValueError, match="ContrastiveLoss"):
        losses.register("mine")(object)
    with pytest.raises(ValueError, match="already registered"):
        @losses.register("simclr")
        class Other(losses.ContrastiveLoss):
            pass
    with pytest.raises(ValueError, match="does not take"):
        @losses.register("mine")
        class Undeclared(losses.ContrastiveLoss):
            hyperparameters = ("temperature",)
