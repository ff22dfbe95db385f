"""A collapsed run never goes unnoticed: its epochs say so in the progress line from the first
one, metrics.jsonl counts them, and a run that stays collapsed for ``collapse_patience``
epochs stops (exit 1, one line of advice) with its checkpoints kept, unless
``stop_on_collapse=false``. The monitor's warnings are progress lines, not raw Python
warnings."""

import json

import pytest

import contrastkit.train.loop as loop
from contrastkit.cli import main
from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.monitoring import COLLAPSE_NEG_SIM_MEAN, is_collapsed
from contrastkit.train.progress import format_epoch
from contrastkit.train.stopping import TrainingCollapsed, TrainingDiverged, collapse_note
from tests.train.test_resume import steps_per_epoch
from tests.train.tiny import tiny_config


def collapsed_counts(run_dir) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["collapsed_epochs"] for line in lines]


def collapse_in(monkeypatch, config, epochs: set[int]) -> None:
    """Make every step of the given epochs (counted from 1) report collapsed embeddings: an
    in-batch negative-pair mean of 0.99 and variance 0 (what a collapsed run measures)."""
    real_step, calls = loop.train_step, []
    per_epoch = steps_per_epoch(config)

    def step(ctx, images, labels):
        values = real_step(ctx, images, labels)
        calls.append(1)
        if (len(calls) - 1) // per_epoch + 1 in epochs:
            values.update(neg_sim_mean=0.99, neg_sim_var=0.0)
        return values

    monkeypatch.setattr(loop, "train_step", step)


def test_collapse_is_the_negative_mean_above_the_monitors_threshold():
    assert COLLAPSE_NEG_SIM_MEAN == 0.9
    assert is_collapsed({"neg_sim_mean": 0.9963, "neg_sim_var": 0.0})
    assert not is_collapsed({"neg_sim_mean": 0.35, "neg_sim_var": 0.03})  # a fresh projector
    assert not is_collapsed({"neg_sim_mean": float("nan")})  # divergence's business


def test_the_batch_1024_run_on_the_digits_stops_collapsed_with_advice(tmp_path, capsys,
                                                                      recwarn):
    """The issue's run (batch 1024 on the 1 437 digits: peak lr 1.2, one step an epoch)
    collapses from its second epoch: that epoch's line says so, and with patience 2 the run
    stops after epoch 3 (exit 1, one line of advice), keeping that epoch's checkpoint."""
    code = main(["pretrain", f"runs_dir={tmp_path}", "name=big", "batch_size=1024",
                 "epochs=10", "device=cpu", "collapse_patience=2"])
    error = capsys.readouterr().err
    assert code == 1
    lines = error.strip().splitlines()
    epoch_lines = [line for line in lines if line.startswith("epoch ")]
    assert len(epoch_lines) == 3 and "COLLAPSED" not in epoch_lines[0]
    assert "COLLAPSED: negative pairs' similarity mean above 0.9" in epoch_lines[1]
    assert "stops if it stays so for 2 epochs" in epoch_lines[1]
    assert "COLLAPSED (2 epochs in a row" in epoch_lines[2]
    last = lines[-1]
    assert last.startswith("contrastkit pretrain: error: training collapsed:")
    for advice in ("epochs 2-3 of 10", "base_lr (now 0.3: peak lr 1.2 at batch 1024)",
                   "warmup_epochs, now 3", "smaller batch_size (1 optimizer step an epoch",
                   "stop_on_collapse=false"):
        assert advice in last
    assert "Traceback" not in error
    assert not [w for w in recwarn if "SimilarityMonitor" in str(w.message)]
    assert collapsed_counts(tmp_path / "big") == [0, 1, 2]
    assert load_checkpoint(tmp_path / "big")["epochs_completed"] == 3


def test_a_collapsed_run_stops_after_patience_epochs_and_resumes_with_stop_off(tmp_path,
                                                                               monkeypatch):
    """Epochs 2, 3 and 4 of 6 collapse (patience 3): the run stops after epoch 4 with
    TrainingCollapsed (a TrainingDiverged), checkpoints kept; resumed with
    stop_on_collapse=false, the count goes on from the checkpoint and the run finishes."""
    config = tiny_config(tmp_path, epochs=6, collapse_patience=3)
    collapse_in(monkeypatch, config, {2, 3, 4, 5})
    with pytest.raises(TrainingCollapsed, match=r"for 3 epochs in a row \(epochs 2-4 of 6; "
                       r"0\.9900, variance 0\.0000, in epoch 4\)") as stopped:
        pretrain(config)
    assert isinstance(stopped.value, TrainingDiverged)
    assert (stopped.value.epoch, stopped.value.epochs_collapsed) == (4, 3)
    assert load_checkpoint(config.run_dir)["epochs_completed"] == 4
    assert collapsed_counts(config.run_dir) == [0, 1, 2, 3]

    monkeypatch.undo()
    collapse_in(monkeypatch, config, {1})  # the resumed run's first epoch is epoch 5
    result = pretrain(config.with_overrides({"stop_on_collapse": False}), resume="last")
    assert [m["collapsed_epochs"] for m in result.history] == [0, 1, 2, 3, 4, 0]


def test_a_healthy_epoch_resets_the_count(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, epochs=5, collapse_patience=2)
    collapse_in(monkeypatch, config, {1, 3, 5})
    result = pretrain(config)  # never 2 collapsed epochs in a row
    assert [m["collapsed_epochs"] for m in result.history] == [1, 0, 1, 0, 1]


def test_the_progress_line_marks_collapsed_epochs():
    metrics = {"epochs_completed": 2, "lr": 0.8, "loss": 37.4, "pos_sim_mean": 1.0,
               "neg_sim_mean": 0.9963, "neg_sim_var": 0.0, "collapsed_epochs": 1,
               "images_per_s": 689.0, "epoch_seconds": 1.5}
    config = PretrainConfig(collapse_patience=4)
    line = format_epoch(metrics, 50, collapse_note(1, config))
    assert line.startswith("epoch 2/50: loss 37.4000, lr 0.8, neg-sim mean 0.9963 var 0.0000")
    assert "collapsed_epochs" not in line  # not a loss part
    assert line.endswith("; COLLAPSED: negative pairs' similarity mean above 0.9, the "
                         "embeddings are nearly one point; the run stops if it stays so for 4 "
                         "epochs (collapse_patience)")
    assert collapse_note(3, config) == "COLLAPSED (3 epochs in a row, stopping at 4)"
    off = PretrainConfig(stop_on_collapse=False)
    assert collapse_note(1, off).endswith("training on (stop_on_collapse=false)")
    assert collapse_note(2, off) == "COLLAPSED (2 epochs in a row)"
    assert collapse_note(0, config) == ""


def test_collapse_patience_is_a_positive_count():
    with pytest.raises(ValueError, match="collapse_patience"):
        PretrainConfig(collapse_patience=0)
