"""``pretrain compile=true``: the step's encoder runs through ``torch.compile``, with the eager
run's result up to rounding; the checkpointed encoder stays the eager module; a run resumes with
the setting changed; and a CPU without a C++ compiler is a clear error before the run starts."""

from __future__ import annotations

import shutil

import pytest
import torch

import contrastkit.train.compiled as compiled_module
import contrastkit.train.loop as loop
from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from tests.train.own_objects import Blobs, jitter, mlp
from tests.train.test_resume import Killed, assert_same_weights, kill_after

HAS_CPP_COMPILER = any(shutil.which(name) for name in compiled_module.CPP_COMPILERS)


def _run(tmp_path, name: str, compile_step: bool, epochs: int = 2, **options):
    config = PretrainConfig(runs_dir=str(tmp_path), name=name, batch_size=64, epochs=epochs,
                            warmup_epochs=1, device="cpu", progress=False, vrns=30.0,
                            compile=compile_step)
    return pretrain(config, encoder=mlp(), dataset=Blobs(), augment=jitter, **options)


@pytest.fixture
def compile_calls(monkeypatch):
    """The models the trainer compiled; ``backend`` (``None``: inductor, the default) is what
    they are compiled with."""
    calls = {"models": [], "backend": None}

    def spy(model):
        calls["models"].append(model)
        if calls["backend"] is None:
            return compiled_module.compiled(model)
        return torch.compile(model, backend=calls["backend"])

    monkeypatch.setattr(loop, "compiled", spy)
    return calls


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CPP_COMPILER, reason="inductor on the CPU needs a C++ compiler")
def test_a_compiled_run_takes_the_eager_runs_steps(tmp_path, compile_calls):
    """Inductor's fused kernels only reorder sums: in float64 the weights agree to 1e-9 after
    two epochs (BatchNorm included). The returned and checkpointed encoder is the eager one."""
    torch.set_default_dtype(torch.float64)
    try:
        eager = _run(tmp_path, "eager", False)
        assert compile_calls["models"] == []
        fast = _run(tmp_path, "compiled", True)
    finally:
        torch.set_default_dtype(torch.float32)
    assert len(compile_calls["models"]) == 1
    assert compile_calls["models"][0] is fast.encoder  # one process: no DDP wrapper
    assert not isinstance(fast.encoder, torch._dynamo.eval_frame.OptimizedModule)
    saved = load_checkpoint(fast.run_dir)["model"]
    assert saved.keys() == eager.encoder.state_dict().keys()  # no "_orig_mod." prefix
    for key, value in eager.encoder.state_dict().items():
        torch.testing.assert_close(fast.encoder.state_dict()[key], value, rtol=1e-9, atol=1e-9,
                                   msg=key)
    assert fast.history[-1]["loss"] == pytest.approx(eager.history[-1]["loss"], rel=1e-9)


def test_a_run_resumes_with_compile_changed(tmp_path, compile_calls):
    """An eager run killed after its first epoch, resumed with compile=true (compiled here with
    the ``eager`` backend: the same operators, so the same weights bit for bit), ends where the
    uninterrupted eager run ends."""
    compile_calls["backend"] = "eager"
    whole = _run(tmp_path, "whole", False)
    with pytest.raises(Killed):
        _run(tmp_path, "killed", False, callbacks=[kill_after(1)])
    resumed = _run(tmp_path, "killed", True, resume="last")
    assert len(compile_calls["models"]) == 1
    assert_same_weights(resumed.encoder.state_dict(), whole.encoder.state_dict())


def test_compile_without_a_cpp_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(compiled_module.shutil, "which", lambda name: None)
    with pytest.raises(ValueError, match=r"compile=true on the CPU needs a C\+\+ compiler.*"
                                         r"compile=false"):
        _run(tmp_path, "no-compiler", True)
    assert not (tmp_path / "no-compiler").exists()  # nothing was written


def test_a_missing_cxx_is_named(monkeypatch):
    monkeypatch.setenv("CXX", "/no/such/compiler")
    with pytest.raises(ValueError, match="CXX='/no/such/compiler'"):
        compiled_module.check_compilable(torch.device("cpu"))
    compiled_module.check_compilable(torch.device("meta"))  # only the CPU needs one here


@pytest.mark.slow
@pytest.mark.skipif(not HAS_CPP_COMPILER, reason="inductor on the CPU needs a C++ compiler")
def test_a_compiled_image_text_run_takes_the_eager_runs_steps(tmp_path, compile_calls, float64):
    """task=image_text compiles the two-tower model once; both towers run through it (the
    ``tower`` argument is a constant to the compiler) and the weights agree with the eager
    run's to 1e-9 in float64 after an epoch, the learned temperature included."""
    from tests.train.tiny_captions import tiny_image_text_config

    def run(name, compile_step):
        config = tiny_image_text_config(tmp_path, name=name, epochs=1, warmup_epochs=0,
                                        learn_temperature=True, compile=compile_step)
        return pretrain(config)

    eager = run("eager", False)
    fast = run("compiled", True)
    assert len(compile_calls["models"]) == 1 and compile_calls["models"][0] is fast.encoder
    for key, value in eager.encoder.state_dict().items():
        torch.testing.assert_close(fast.encoder.state_dict()[key], value, rtol=1e-9, atol=1e-9,
                                   msg=key)
    last, eager_last = fast.history[-1], eager.history[-1]
    assert "temperature" in eager_last
    for name in ("loss", "temperature"):
        assert last[name] == pytest.approx(eager_last[name], rel=1e-9)
