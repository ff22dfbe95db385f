"""SimilarityMonitorCallback in a real Lightning Trainer on the CPU: what the CSV logger wrote
is what a SimilarityMonitor fed the same embeddings returns, at the trainer's global steps."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from contrastkit import losses
from contrastkit.integrations.lightning import (
    SimilarityMonitorCallback,
    import_lightning,
    views_from_outputs,
)
from contrastkit.monitor import SimilarityMonitor

ROWS, DIM, BATCH = 48, 6, 8


def _loader():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, DIM, generator=generator)
    views = (x + 0.2 * torch.randn(ROWS, DIM, generator=generator),
             x + 0.2 * torch.randn(ROWS, DIM, generator=generator))
    labels = torch.arange(ROWS) % 3
    dataset = torch.utils.data.TensorDataset(*views, labels)
    return torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=False)


def _module(pl, output):
    """A linear encoder trained with SimCLR; ``output(u, v, loss)`` is what ``training_step``
    returns. It keeps a copy of each step's embeddings and labels in ``seen``."""

    class TwoViews(pl.LightningModule):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.encoder = torch.nn.Linear(DIM, 4)
            self.seen = []

        def training_step(self, batch, batch_idx):
            x1, x2, labels = batch
            u, v = self.encoder(x1), self.encoder(x2)
            self.seen.append((u.detach().clone(), v.detach().clone(), labels.clone()))
            return output(u, v, losses.simclr(u, v, temperature=0.5))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

    return TwoViews()


def _fit(tmp_path, callback, output, steps=6):
    pl = pytest.importorskip("lightning.pytorch")
    model = _module(pl, output)
    trainer = pl.Trainer(max_steps=steps, logger=pl.loggers.CSVLogger(tmp_path, name="run"),
                         callbacks=[callback], accelerator="cpu", enable_progress_bar=False,
                         enable_checkpointing=False, enable_model_summary=False,
                         log_every_n_steps=1)
    trainer.fit(model, _loader())
    with open(trainer.logger.log_dir + "/metrics.csv", newline="") as file:
        logged = [row for row in csv.DictReader(file)]
    return model.seen, logged


def _reference(seen, labelled, **settings):
    monitor = SimilarityMonitor(**settings)
    results = {}
    for step, (u, v, labels) in enumerate(seen, start=1):
        stats = monitor.update(u, v, labels if labelled else None)
        if stats is not None:
            results[step] = stats
    return results


def _assert_logged(logged, expected, prefix="similarity/"):
    rows = {int(row["step"]): row for row in logged if row.get(f"{prefix}negative_var")}
    assert sorted(rows) == sorted(expected)
    for step, stats in expected.items():
        for name, value in stats.items():
            assert float(rows[step][prefix + name]) == pytest.approx(value, abs=1e-12), name


def test_the_logged_windows_are_the_monitor_s_at_the_global_steps(tmp_path):
    callback = SimilarityMonitorCallback(SimilarityMonitor(n=ROWS, log_every=2))
    seen, logged = _fit(tmp_path, callback, lambda u, v, loss: {"loss": loss, "u": u, "v": v})
    expected = _reference(seen, labelled=False, n=ROWS, log_every=2)
    assert sorted(expected) == [2, 4, 6]
    _assert_logged(logged, expected)
    assert callback.last == expected[6]


def test_an_embeddings_function_can_take_the_labels_from_the_batch(tmp_path):
    callback = SimilarityMonitorCallback(
        SimilarityMonitor(log_every=3), prefix="train/",
        embeddings=lambda outputs, batch: (*outputs["views"], batch[2]))
    seen, logged = _fit(tmp_path, callback, lambda u, v, loss: {"loss": loss, "views": (u, v)})
    expected = _reference(seen, labelled=True, log_every=3)
    assert "negative_same_class_mean" in expected[3]
    _assert_logged(logged, expected, prefix="train/")


def test_an_output_without_the_views_is_named():
    with pytest.raises(ValueError, match="training_step must return a dict with the two views' "
                                         "embeddings under 'u' and 'v'.*got \\['loss'\\]"):
        views_from_outputs({"loss": torch.tensor(1.0)}, None)
    callback = SimilarityMonitorCallback(embeddings=lambda outputs, batch: (outputs,))
    with pytest.raises(ValueError, match="embeddings must return \\(u, v\\) or \\(u, v, "
                                         "labels\\), got tuple of length 1"):
        callback.on_train_batch_end(None, None, torch.zeros(4, 2), None, 0)


@pytest.mark.parametrize("arguments, message", [
    ({"monitor": "every step"}, "monitor must be a contrastkit.monitor.SimilarityMonitor, got str"),
    ({"embeddings": 3}, "embeddings must be a function"),
    ({"prefix": None}, "prefix must be a string, got NoneType"),
])
def test_bad_settings_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        SimilarityMonitorCallback(**arguments)


def test_pytorch_lightning_is_used_where_lightning_is_not_installed(monkeypatch):
    pytest.importorskip("pytorch_lightning")
    monkeypatch.setitem(sys.modules, "lightning.pytorch", None)
    assert import_lightning().__name__ == "pytorch_lightning"


def test_without_lightning_the_module_imports_and_the_callback_names_the_extra():
    """In a fresh interpreter where neither package can be imported."""
    script = textwrap.dedent("""
        import sys
        sys.modules["lightning"] = sys.modules["lightning.pytorch"] = None
        sys.modules["pytorch_lightning"] = None
        from contrastkit.integrations.lightning import SimilarityMonitorCallback
        try:
            SimilarityMonitorCallback()
        except ImportError as error:
            print(error)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "needs PyTorch Lightning" in result.stdout
    assert "pip install 'contrastkit[lightning]'" in result.stdout
