"""The ``precision`` setting: what ``auto`` resolves to, the old ``amp`` setting read in today's
terms, and training under bf16 and fp16 autocast (on the CPU here; the CUDA runs are in
tests/test_cuda.py)."""

import pytest
import torch

from contrastkit.train import PretrainConfig, load_config, pretrain
from contrastkit.train.config_values import translated_settings
from contrastkit.train.precision import resolve_precision
from contrastkit.train.run_folder import check_same_config
from tests.train.own_objects import Blobs, jitter, mlp
from tests.train.test_own_inputs import config as own_config
from tests.train.tiny import tiny_config


@pytest.mark.parametrize("setting, resolved", [("auto", "fp32"), ("fp32", "fp32"),
                                               ("bf16", "bf16"), ("fp16", "fp16")])
def test_auto_is_full_precision_on_the_cpu_and_a_choice_is_kept(setting, resolved):
    precision = resolve_precision(setting, torch.device("cpu"))
    assert precision.name == resolved
    assert precision.scaled == (resolved == "fp16")
    assert precision.scaler().is_enabled() == (resolved == "fp16")


def test_an_unknown_precision_is_named():
    with pytest.raises(ValueError, match="precision must be one of .*auto.*bf16.*fp16.*fp32.*"
                                         "got 'fp8'"):
        resolve_precision("fp8", torch.device("cpu"))


@pytest.mark.parametrize("amp, precision", [("false", "fp32"), ("true", "auto"),
                                            (False, "fp32"), (True, "auto")])
def test_the_old_amp_setting_reads_as_precision(amp, precision):
    assert translated_settings({"amp": amp, "epochs": 3}) == {"precision": precision,
                                                              "epochs": 3}
    assert load_config(None, [f"amp={amp}"]).precision == precision


def test_amp_and_precision_that_disagree_are_refused():
    with pytest.raises(ValueError, match="amp=false and precision=bf16 disagree"):
        load_config(None, ["amp=false", "precision=bf16"])


def test_a_run_saved_with_amp_false_resumes_as_fp32_and_not_as_bf16(tmp_path):
    saved = tmp_path / "config.yaml"
    old = PretrainConfig(precision="fp32").to_dict()
    del old["precision"]
    old["amp"] = False
    import yaml

    saved.write_text(yaml.safe_dump(old))
    assert check_same_config(PretrainConfig(precision="fp32"), saved) == old["epochs"]
    with pytest.raises(ValueError, match="precision: 'fp32' -> 'bf16'"):
        check_same_config(PretrainConfig(precision="bf16"), saved)


def spy_on_loss_inputs(monkeypatch) -> list[torch.dtype]:
    """The dtypes of the embeddings every loss's ``compute`` is called with, as a list that
    fills while the test trains."""
    from contrastkit.losses.base import CompositeLoss, ContrastiveLoss

    seen = []
    for kind in (ContrastiveLoss, CompositeLoss):
        def spying(self, u, v, labels=None, _compute=kind.compute):
            seen.append(u.dtype)
            return _compute(self, u, v, labels)

        monkeypatch.setattr(kind, "compute", spying)
    return seen


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16),
                                              ("fp16", torch.float16)])
def test_a_run_trains_under_autocast_and_its_loss_sees_half_precision(tmp_path, monkeypatch,
                                                                     precision, dtype):
    seen = spy_on_loss_inputs(monkeypatch)
    # an MLP on vectors: the CPU's float16 convolutions would take minutes
    result = pretrain(own_config(tmp_path, epochs=2, vrns=30.0, precision=precision),
                      encoder=mlp(), dataset=Blobs(), augment=jitter)
    assert set(seen) == {dtype}
    last = result.history[-1]
    assert torch.isfinite(torch.tensor([last["loss"], last["neg_sim_var"]])).all()
    # the weights stay float32, and so does the checkpointed state
    assert {p.dtype for p in result.encoder.parameters()} == {torch.float32}


def test_fp32_gives_the_loss_float32_embeddings(tmp_path, monkeypatch):
    seen = spy_on_loss_inputs(monkeypatch)
    pretrain(tiny_config(tmp_path, epochs=1))  # auto on the CPU
    assert set(seen) == {torch.float32}
