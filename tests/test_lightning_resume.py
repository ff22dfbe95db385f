"""SimilarityMonitorCallback in a real Lightning Trainer on the CPU: a skipped batch (training_step
returned None) is not monitored, and a run resumed from a Lightning checkpoint taken in the
middle of a window logs the windows an uninterrupted run logs."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import pytest
import torch

from contrastkit import losses
from contrastkit.integrations.lightning import SimilarityMonitorCallback
from contrastkit.monitor import SimilarityMonitor

ROWS, DIM, BATCH = 48, 6, 8  # 6 batches an epoch
PREFIX = "similarity/"


def _loader():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, DIM, generator=generator)
    views = (x + 0.2 * torch.randn(ROWS, DIM, generator=generator),
             x + 0.2 * torch.randn(ROWS, DIM, generator=generator))
    dataset = torch.utils.data.TensorDataset(*views)
    return torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=False)


def _module(pl, skip=()):
    """A linear encoder trained with SimCLR; ``training_step`` returns ``None`` at the global
    steps in ``skip`` and keeps a copy of every other step's embeddings in ``seen``."""

    class TwoViews(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.encoder = torch.nn.Linear(DIM, 4)
            self.seen = []

        def training_step(self, batch, batch_idx):
            if self.global_step in skip:
                return None
            u, v = self.encoder(batch[0]), self.encoder(batch[1])
            self.seen.append((u.detach().clone(), v.detach().clone()))
            return {"loss": losses.simclr(u, v, temperature=0.5), "u": u, "v": v}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    return TwoViews()


def _trainer(pl, tmp_path, name, callbacks, steps):
    return pl.Trainer(max_steps=steps, logger=pl.loggers.CSVLogger(tmp_path, name=name),
                      callbacks=callbacks, accelerator="cpu", enable_progress_bar=False,
                      enable_checkpointing=any(isinstance(c, pl.callbacks.ModelCheckpoint)
                                               for c in callbacks),
                      enable_model_summary=False, log_every_n_steps=1)


def _windows(trainer):
    """The logged windows: ``{global step: {statistic: value}}``."""
    with open(trainer.logger.log_dir + "/metrics.csv", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row.get(PREFIX + "negative_var")]
    return {int(row["step"]): {name[len(PREFIX):]: float(value) for name, value in row.items()
                               if name.startswith(PREFIX) and value != ""} for row in rows}


def test_a_skipped_batch_is_not_monitored(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    callback = SimilarityMonitorCallback(SimilarityMonitor(n=ROWS, log_every=2))
    model = _module(pl, skip={1, 4})
    trainer = _trainer(pl, tmp_path, "skip", [callback], steps=6)
    trainer.fit(model, _loader())

    assert callback.monitor.step == len(model.seen) == 4
    reference, expected = SimilarityMonitor(n=ROWS, log_every=2), []
    for u, v in model.seen:
        if (stats := reference.update(u, v)) is not None:
            expected.append(stats)
    logged = list(_windows(trainer).values())
    assert len(logged) == len(expected) == 2
    for got, want in zip(logged, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-12)
    assert callback.last == expected[-1]


def test_a_run_resumed_mid_window_logs_the_uninterrupted_run_s_windows(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    settings = {"n": ROWS, "log_every": 4}  # windows end at steps 4, 8, 12

    whole = SimilarityMonitorCallback(SimilarityMonitor(**settings))
    whole_model = _module(pl)
    whole_trainer = _trainer(pl, tmp_path, "whole", [whole], steps=12)
    whole_trainer.fit(whole_model, _loader())
    expected = _windows(whole_trainer)
    assert sorted(expected) == [4, 8, 12]

    # the interrupted run: checkpointed at step 6 (two steps into the window 5-8), died at 7
    first = SimilarityMonitorCallback(SimilarityMonitor(**settings))
    checkpoints = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "checkpoints",
                                               every_n_train_steps=6, save_top_k=-1)
    _trainer(pl, tmp_path, "first", [first, checkpoints], steps=7).fit(_module(pl), _loader())
    (checkpoint,) = (tmp_path / "checkpoints").glob("*step=6.ckpt")
    state = torch.load(checkpoint, weights_only=False)["callbacks"][first.state_key]
    assert set(state) == {"monitor", "last"}

    resumed = SimilarityMonitorCallback(SimilarityMonitor(**settings))
    resumed_model = _module(pl)
    resumed_trainer = _trainer(pl, tmp_path, "resumed", [resumed], steps=12)
    resumed_trainer.fit(resumed_model, _loader(), ckpt_path=checkpoint)

    # the resumed run trains on what the uninterrupted one did from step 7 on
    assert len(resumed_model.seen) == 6
    for (u, v), (u_whole, v_whole) in zip(resumed_model.seen, whole_model.seen[6:], strict=True):
        torch.testing.assert_close(u, u_whole)
        torch.testing.assert_close(v, v_whole)
    logged = _windows(resumed_trainer)
    assert sorted(logged) == [8, 12]
    for step in (8, 12):
        assert logged[step] == pytest.approx(expected[step], abs=1e-12), step
        assert logged[step]["steps"] == 4.0
    assert resumed.monitor.step == whole.monitor.step == 12
    assert resumed.last == pytest.approx(whole.last, abs=1e-12)


def test_each_prefix_keeps_its_own_state_and_a_bad_state_is_named():
    pytest.importorskip("lightning.pytorch")
    first, second = (SimilarityMonitorCallback(prefix="a/"),
                     SimilarityMonitorCallback(prefix="b/"))
    assert first.state_key != second.state_key

    monitor = SimilarityMonitor(log_every=3)
    generator = torch.Generator().manual_seed(0)
    source = SimilarityMonitorCallback(monitor)
    trainer = SimpleNamespace(loggers=[], global_step=0)
    for _ in range(2):
        u = torch.randn(8, 4, generator=generator)
        source.on_train_batch_end(trainer, None, {"u": u, "v": u + 0.1}, None, 0)
    target = SimilarityMonitorCallback(SimilarityMonitor(log_every=3))
    target.load_state_dict(source.state_dict())
    assert target.monitor.step == 2
    u = torch.randn(8, 4, generator=generator)
    for callback in (source, target):
        callback.on_train_batch_end(trainer, None, {"u": u, "v": u + 0.1}, None, 0)
    assert target.last is not None
    assert target.last == pytest.approx(source.last, abs=1e-12)

    with pytest.raises(ValueError, match="needs the callback's state_dict\\(\\).*got \\['x'\\]"):
        target.load_state_dict({"x": 1})


@pytest.mark.cuda
def test_a_loaded_window_moves_to_the_device_of_the_embeddings():
    pytest.importorskip("lightning.pytorch")
    generator = torch.Generator().manual_seed(0)
    batches = [torch.randn(8, 4, generator=generator) for _ in range(3)]
    trainer = SimpleNamespace(loggers=[], global_step=0)
    source = SimilarityMonitorCallback(SimilarityMonitor(log_every=3))
    for u in batches[:2]:
        source.on_train_batch_end(trainer, None, {"u": u.cuda(), "v": u.cuda() + 0.1}, None, 0)
    target = SimilarityMonitorCallback(SimilarityMonitor(log_every=3))
    target.load_state_dict(source.state_dict())  # read onto the CPU
    for callback in (source, target):
        u = batches[2].cuda()
        callback.on_train_batch_end(trainer, None, {"u": u, "v": u + 0.1}, None, 0)
    assert target.last == pytest.approx(source.last, abs=1e-12)
