"""``pretrain grad_cache_chunk=...``: the trainer's step by gradient caching is the plain step's
gradient (exactly, for an encoder without BatchNorm), and a cached run resumes exactly."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import contrastkit.train.step as step
from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.grad_cache import grad_cache
from tests.train.own_objects import Blobs, jitter
from tests.train.test_resume import Killed, assert_same_weights, kill_after
from tests.train.tiny import tiny_config


def _mlp_without_batch_norm() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _own_run(tmp_path, name: str, chunk: int, loss: str):
    config = PretrainConfig(runs_dir=str(tmp_path), name=name, batch_size=64, epochs=2,
                            warmup_epochs=1, device="cpu", progress=False, loss=loss,
                            vrns=30.0 if loss == "simclr" else 0.0, grad_cache_chunk=chunk)
    return pretrain(config, encoder=_mlp_without_batch_norm(), dataset=Blobs(),
                    augment=jitter)


@pytest.mark.parametrize("loss", ["simclr", "supcon"])
def test_a_cached_run_takes_the_plain_steps_of_an_encoder_without_batch_norm(tmp_path, loss,
                                                                           monkeypatch):
    """In float64, so that the only difference is the order of the sums; a chunk of at least
    the batch is the plain step."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[4])  # the chunk size
        return grad_cache(*args, **kwargs)

    monkeypatch.setattr(step, "grad_cache", counted)
    torch.set_default_dtype(torch.float64)
    try:
        plain = _own_run(tmp_path, "plain", 0, loss)
        whole = _own_run(tmp_path, "whole", 64, loss)
        assert calls == []
        chunked = _own_run(tmp_path, "chunked", 16, loss)
    finally:
        torch.set_default_dtype(torch.float32)
    assert calls == [16] * (2 * len(Blobs()) // 64)  # every step of the two epochs
    assert_same_weights(whole.encoder.state_dict(), plain.encoder.state_dict())
    for key, value in plain.encoder.state_dict().items():
        torch.testing.assert_close(chunked.encoder.state_dict()[key], value, rtol=1e-9,
                                   atol=1e-9, msg=key)
    assert chunked.history[-1]["loss"] == pytest.approx(plain.history[-1]["loss"], rel=1e-9)


def test_a_killed_cached_run_resumes_exactly(tmp_path):
    """The built-in small CNN (with BatchNorm) on digits, chunks of 32 of a batch of 128."""
    uninterrupted = pretrain(tiny_config(tmp_path / "a", grad_cache_chunk=32))
    config = tiny_config(tmp_path / "b", grad_cache_chunk=32)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    resumed = pretrain(config, resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert load_checkpoint(config.run_dir)["epochs_completed"] == config.epochs
    assert resumed.history[-1]["loss"] == uninterrupted.history[-1]["loss"]


def test_a_negative_chunk_is_refused():
    with pytest.raises(ValueError, match="grad_cache_chunk"):
        tiny_config("runs", grad_cache_chunk=-1)
