"""The trainer, the evaluation and the measurements on a CUDA GPU (marked ``cuda``: skipped on a
machine without one; ``python -m pytest -m cuda`` runs them, and ``benchmarks/gpu_check.sh`` runs
them with the main job and the GPU benchmark). The losses' own CUDA tests, fused and chunked,
in float32, bfloat16 and float16, are in tests/losses/.

What a GPU changes, and so what is tested here: the device every tensor lives on (a generator
draws on the CPU, the augmentation applies on the GPU), the precision (``auto`` is bf16),
the ``channels_last`` layout, and float rounding (cuDNN may pick other algorithms, TF32
convolutions): a GPU result is compared with the CPU's within a stated tolerance, never
bit for bit, except where contrastkit promises full float32 (``embed``, ``measure``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from contrastkit import geometry
from contrastkit.cli import main
from contrastkit.data import SimCLRAugment, load_dataset
from contrastkit.train import pretrain
from contrastkit.train.precision import resolve_precision
from tests.host_reads import count_host_reads
from tests.rows_close import assert_rows_close
from tests.train.test_precision import spy_on_loss_inputs
from tests.train.tiny import tiny_config

pytestmark = pytest.mark.cuda


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory):
    """The main job's settings on CUDA, two epochs: the run folder."""
    root = tmp_path_factory.mktemp("cuda")
    return pretrain(tiny_config(root, device="cuda", epochs=2)).run_dir


def test_auto_precision_is_bf16_on_a_gpu_that_has_it():
    expected = "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"
    assert resolve_precision("auto", torch.device("cuda")).name == expected


def test_the_main_job_trains_in_bf16_with_channels_last(tmp_path, monkeypatch):
    seen = spy_on_loss_inputs(monkeypatch)
    result = pretrain(tiny_config(tmp_path, device="cuda", epochs=1))
    assert set(seen) == {torch.bfloat16}
    convolutions = [p for p in result.encoder.parameters() if p.ndim == 4]
    assert convolutions and all(p.is_contiguous(memory_format=torch.channels_last)
                                for p in convolutions)
    assert all(np.isfinite(value) for value in result.history[-1].values()
               if isinstance(value, float))


def test_evaluate_embed_and_geometry_run_on_cuda(cuda_run, capsys):
    assert main(["evaluate", str(cuda_run), "--device", "cuda", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "linear probe" in printed and "negative-pair similarity" in printed
    results = json.loads((cuda_run / "eval.json").read_text())
    assert results["linear_top1"] > 50  # ten digits: chance is 10 %
    assert main(["embed", str(cuda_run), "--split", "test", "--device", "cuda",
                 "--no-progress"]) == 0
    assert main(["geometry", str(cuda_run / "embeddings-test.npz")]) == 0


def test_embed_on_cuda_is_the_cpu_s_up_to_float32_rounding(cuda_run, tmp_path):
    """``embed`` computes in full float32 (no TF32) on any device."""
    on_gpu, on_cpu = tmp_path / "gpu.npz", tmp_path / "cpu.npz"
    for device, out in (("cuda", on_gpu), ("cpu", on_cpu)):
        assert main(["embed", str(cuda_run), "--split", "test", "--device", device,
                     "--out", str(out), "--no-progress"]) == 0
    with np.load(on_gpu) as gpu, np.load(on_cpu) as cpu:
        for name in ("features", "embeddings"):
            assert_rows_close(gpu[name], cpu[name])
        np.testing.assert_array_equal(gpu["labels"], cpu["labels"])


def test_measure_with_the_built_in_augmentation_on_cuda_matches_the_cpu():
    """The crash this issue began with: the augmentation's generator was made on the GPU
    while ``SimCLRAugment`` draws on the CPU. The same seed gives the same pairs anywhere."""
    from contrastkit.models import build_encoder

    dataset = load_dataset("digits", "train")
    info = dataset.info
    torch.manual_seed(0)
    encoder = build_encoder("small_cnn", info.channels, info.mean, info.std, 32, 16)
    simclr = SimCLRAugment(size=8)

    def augment(images, generator):  # the digits are uint8
        return simclr(images.float() / 255, generator)

    on_cpu = geometry.measure(encoder, dataset, augment, n_pairs=256)
    on_gpu = geometry.measure(encoder.cuda(), dataset, augment, n_pairs=256)
    assert on_gpu.as_dict() == pytest.approx(on_cpu.as_dict(), rel=1e-3, abs=1e-5)


def test_a_recipe_s_quick_tier_runs_on_cuda(tmp_path):
    from contrastkit.experiments import reproduce

    result = reproduce("similarities/table1", "quick", out=tmp_path, progress=False)
    assert result.verdicts and (tmp_path / "results.csv").is_file()


def test_image_text_trains_and_evaluates_zero_shot_and_retrieval_on_cuda(tmp_path):
    from contrastkit.evaluate import evaluate_run
    from tests.train.tiny_captions import tiny_image_text_config

    run = pretrain(tiny_image_text_config(tmp_path, device="cuda")).run_dir
    results = evaluate_run(run, device="cuda", progress=False)
    assert {"zero_shot_top1", "image_to_text_r1", "text_to_image_r1"} <= set(results)


def test_learned_siglip_scale_and_bias_train_on_cuda(tmp_path):
    result = pretrain(tiny_config(tmp_path, device="cuda", epochs=1, loss="siglip", vrns=0.0,
                                  learn_temperature=True))
    last = result.history[-1]
    assert np.isfinite(last["loss"]) and last["siglip_scale"] != pytest.approx(10.0)


def test_grad_cache_on_cuda_is_the_full_batch_gradient():
    from contrastkit import losses
    from contrastkit.train.grad_cache import grad_cache

    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 16)).cuda()
    view1, view2 = torch.randn(2, 256, 32, device="cuda").unbind(0)
    criterion = losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=1000)
    criterion(encoder(view1), encoder(view2)).backward()
    full = [p.grad.clone() for p in encoder.parameters()]
    encoder.zero_grad()
    grad_cache(encoder, criterion, view1, view2, chunk_size=32)
    for expected, cached in zip(full, (p.grad for p in encoder.parameters()), strict=True):
        assert (cached - expected).abs().max() <= 1e-5 * expected.abs().max()


def test_grad_cache_trains_in_bf16_on_cuda(tmp_path):
    result = pretrain(tiny_config(tmp_path, device="cuda", epochs=1, grad_cache_chunk=32))
    assert np.isfinite(result.history[-1]["loss"])


def test_a_run_stopped_on_cuda_resumes_to_the_uninterrupted_run_s_weights(tmp_path,
                                                                         monkeypatch):
    """Float32 on the GPU: a resumed run restores every state (weights, optimizer, schedule,
    generators). What it cannot restore is the GPU's own nondeterminism: by default cuDNN runs
    convolutions in TF32 (a 10-bit mantissa) with algorithms whose atomic sums round in
    another order on every call, and over a few dozen SGD steps such differences grow into
    visibly different weights even between two uninterrupted runs. So the runs here use
    deterministic cuDNN algorithms without TF32, and the weights after the second epoch must
    agree to float32 rounding (the pooling layers' backward still sums atomically)."""
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    whole = pretrain(tiny_config(tmp_path / "whole", device="cuda", precision="fp32",
                                 epochs=2)).encoder

    class Stop(Exception):
        pass

    def stop_after_first(completed, metrics):
        if completed == 1:
            raise Stop

    config = tiny_config(tmp_path / "stopped", device="cuda", precision="fp32", epochs=2)
    with pytest.raises(Stop):
        pretrain(config, callbacks=[stop_after_first])
    resumed = pretrain(config, resume="last").encoder
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        if a.is_floating_point():
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
        else:
            assert torch.equal(a, b)


def test_the_similarity_monitor_on_cuda_is_the_cpu_s():
    from contrastkit.monitor import SimilarityMonitor

    generator = torch.Generator().manual_seed(0)
    batches = [torch.randn(2, 64, 16, generator=generator) for _ in range(3)]
    windows = []
    for device in ("cpu", "cuda"):
        monitor = SimilarityMonitor(n=1000, log_every=3)
        for u, v in batches:
            window = monitor.update(u.to(device), v.to(device))
        windows.append(window)
    assert windows[1] == pytest.approx(windows[0], rel=1e-9, abs=1e-12)


def test_the_lightning_callback_watches_a_gpu_run(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    from contrastkit import losses
    from contrastkit.integrations.lightning import SimilarityMonitorCallback
    from contrastkit.monitor import SimilarityMonitor

    class Views(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Linear(8, 4)

        def training_step(self, batch, batch_idx):
            u, v = self.encoder(batch[0]), self.encoder(batch[1])
            return {"loss": losses.simclr(u, v, temperature=0.5), "u": u, "v": v}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=generator)
    data = torch.utils.data.TensorDataset(x + 0.1 * torch.randn(64, 8, generator=generator),
                                          x + 0.1 * torch.randn(64, 8, generator=generator))
    callback = SimilarityMonitorCallback(SimilarityMonitor(log_every=2))
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=4, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         callbacks=[callback], default_root_dir=tmp_path)
    trainer.fit(Views(), torch.utils.data.DataLoader(data, batch_size=16))
    assert callback.last is not None and np.isfinite(callback.last["negative_var"])


def test_a_training_step_waits_for_the_gpu_twice(tmp_path, monkeypatch):
    """Each wait for the GPU (a value read to the host) drains its queue of work. A step waits
    twice: the loss's range check of the normalized views and the step's one read of its loss
    values with the monitor's statistics (the loop's finite-state check is a third, after the
    step). The augmentation's draws are CPU tensors: no wait."""
    from contrastkit.train import loop

    inside = []
    waits = count_host_reads(monkeypatch, lambda tensor: bool(inside) and tensor.is_cuda)
    real_step = loop.train_step

    def step(*args):
        inside.append(1)
        try:
            return real_step(*args)
        finally:
            inside.clear()

    monkeypatch.setattr(loop, "train_step", step)
    config = tiny_config(tmp_path, device="cuda", epochs=1)
    pretrain(config)
    steps = len(load_dataset("digits", "train")) // config.batch_size
    assert len(waits) == 2 * steps, sorted(set(waits))
