"""OnlineProbeCallback in a real Lightning Trainer on the CPU: the run's weights are those of a
run without it (its training loader shuffles from torch's global generator, so a probe that drew
a random number would change them), each epoch logs the probe's accuracies (the kNN's is the
offline kNN's of the epoch's encoder), and a run resumed from a Lightning checkpoint continues
the probe's head."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from contrastkit import losses
from contrastkit.evaluate import extract_features, knn_accuracy
from contrastkit.integrations.lightning import OnlineProbeCallback

ROWS, TEST_ROWS, DIM, BATCH, CLASSES = 48, 24, 6, 8, 3
KEYS = ("online_linear_top1", "online_knn_top1")


def _data(rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(rows) % CLASSES
    centres = 2 * torch.randn(CLASSES, DIM, generator=torch.Generator().manual_seed(99))
    return centres[labels] + torch.randn(rows, DIM, generator=generator), labels


def _probe_sets():
    return (torch.utils.data.TensorDataset(*_data(ROWS, 0)),
            torch.utils.data.TensorDataset(*_data(TEST_ROWS, 1)))


def _loader(shuffle: bool):
    """The two views of the training rows; ``shuffle`` draws the order from torch's global
    generator (which a resumed Lightning run does not restore)."""
    x, _ = _data(ROWS, 0)
    generator = torch.Generator().manual_seed(2)
    views = (x + 0.3 * torch.randn(ROWS, DIM, generator=generator),
             x + 0.3 * torch.randn(ROWS, DIM, generator=generator))
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*views),
                                       batch_size=BATCH, shuffle=shuffle)


def _module(pl):
    class TwoViews(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.backbone = torch.nn.Sequential(torch.nn.Linear(DIM, 8), torch.nn.ReLU())
            self.projector = torch.nn.Linear(8, 4)

        def training_step(self, batch, batch_idx):
            u, v = (self.projector(self.backbone(view)) for view in batch)
            return losses.simclr(u, v, temperature=0.5)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    return TwoViews()


def _fit(pl, tmp_path, name, callbacks, epochs, ckpt_path=None, shuffle=False):
    model = _module(pl)  # seeds torch's global generator
    checkpointing = any(isinstance(c, pl.callbacks.ModelCheckpoint) for c in callbacks)
    trainer = pl.Trainer(max_epochs=epochs, logger=pl.loggers.CSVLogger(tmp_path, name=name),
                         callbacks=callbacks, accelerator="cpu", enable_progress_bar=False,
                         enable_checkpointing=checkpointing, enable_model_summary=False,
                         log_every_n_steps=1)
    trainer.fit(model, _loader(shuffle), ckpt_path=ckpt_path)
    path = Path(trainer.logger.log_dir) / "metrics.csv"
    if not path.is_file():  # nothing was logged
        return model, []
    with open(path, newline="") as file:
        logged = [row for row in csv.DictReader(file) if row.get(KEYS[0])]
    return model, logged


def _callback():
    return OnlineProbeCallback(*_probe_sets(), CLASSES, encoder=lambda module: module.backbone)


def test_the_callback_changes_no_weight_and_logs_each_epoch(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    plain, _ = _fit(pl, tmp_path, "plain", [], epochs=2, shuffle=True)
    callback = _callback()
    probed, logged = _fit(pl, tmp_path, "probed", [callback], epochs=2, shuffle=True)
    for name, value in plain.state_dict().items():
        assert torch.equal(probed.state_dict()[name], value), name
    assert [int(row["step"]) for row in logged] == [ROWS // BATCH, 2 * ROWS // BATCH]
    train, test = _probe_sets()
    train_x, train_y = extract_features(probed.backbone, train, projector=True)
    test_x, test_y = extract_features(probed.backbone, test, projector=True)
    offline = knn_accuracy(train_x, train_y, test_x, test_y, CLASSES)
    assert float(logged[-1]["online_knn_top1"]) == pytest.approx(offline["top1"], abs=1e-9)
    assert callback.last == {key: pytest.approx(float(logged[-1][key])) for key in KEYS}


def test_a_resumed_run_continues_the_probe_s_head(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    whole = _callback()
    _fit(pl, tmp_path, "whole", [whole], epochs=2)

    checkpoints = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "checkpoints", save_top_k=-1)
    _fit(pl, tmp_path, "first", [_callback(), checkpoints], epochs=1)
    (checkpoint,) = (tmp_path / "checkpoints").glob("*.ckpt")
    resumed = _callback()
    _, logged = _fit(pl, tmp_path, "resumed", [resumed], epochs=2, ckpt_path=checkpoint)
    assert len(logged) == 1
    state, reference = resumed.probe.state_dict(), whole.probe.state_dict()
    assert state["epochs_probed"] == reference["epochs_probed"] == 2
    for name, value in reference["head"].items():
        assert torch.equal(state["head"][name], value), name
    assert resumed.last == whole.last


def test_bad_arguments_and_a_bad_state_are_named():
    pytest.importorskip("lightning.pytorch")
    with pytest.raises(ValueError, match="encoder must be a function pl_module -> nn.Module"):
        OnlineProbeCallback(*_probe_sets(), CLASSES, encoder="backbone")
    with pytest.raises(ValueError, match="num_classes must be >= 1, got 0"):
        OnlineProbeCallback(*_probe_sets(), 0)
    with pytest.raises(ValueError, match="needs the callback's state_dict\\(\\).*got \\['x'\\]"):
        _callback().load_state_dict({"x": 1})
