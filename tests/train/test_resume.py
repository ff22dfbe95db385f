"""A run killed after epoch k and resumed ends exactly where an uninterrupted run ends;
checkpoints are atomic, and a corrupt one is reported while the previous one survives."""

import json

import pytest
import torch

from contrastkit.train import load_checkpoint, pretrain, save_checkpoint
from tests.train.tiny import tiny_config


class Killed(Exception):
    pass


def kill_after(epoch_to_die):
    def callback(epoch, metrics):
        if epoch == epoch_to_die:
            raise Killed
    return callback


def assert_same_weights(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def without_timing(metrics):
    return [{k: v for k, v in m.items() if k not in ("images_per_s", "epoch_seconds")}
            for m in metrics]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted")
    return pretrain(tiny_config(root))


def test_killed_then_resumed_run_matches_the_uninterrupted_run(tmp_path, uninterrupted):
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(0)])
    assert load_checkpoint(config.run_dir)["epoch"] == 0
    resumed = pretrain(config, resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert without_timing(resumed.history) == without_timing(uninterrupted.history)
    last = load_checkpoint(config.run_dir)
    reference = load_checkpoint(uninterrupted.run_dir)
    assert_same_weights(last["model"], reference["model"])
    assert torch.equal(last["augment_rng"], reference["augment_rng"])
    assert (config.run_dir / "curves.png").stat().st_size > 1000


def test_corrupt_last_checkpoint_is_reported_and_previous_survives(tmp_path, uninterrupted):
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    last = config.run_dir / "last.pt"
    last.write_bytes(last.read_bytes()[:1000])  # a torn write
    with pytest.raises(ValueError, match="corrupt.*previous.pt.*--resume previous"):
        pretrain(config, resume="last")
    assert load_checkpoint(config.run_dir, "previous")["epoch"] == 0
    resumed = pretrain(config, resume="previous")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())


def test_a_failed_write_leaves_the_last_checkpoint_intact(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, {"epoch": 4})

    def failing_save(state, handle):
        handle.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path, {"epoch": 5})
    monkeypatch.undo()
    assert load_checkpoint(tmp_path)["epoch"] == 4


def test_run_folder_holds_config_metrics_and_refuses_to_be_overwritten(tmp_path):
    config = tiny_config(tmp_path, epochs=1)
    pretrain(config)
    lines = (config.run_dir / "metrics.jsonl").read_text().splitlines()
    metrics = json.loads(lines[0])
    for key in ("loss", "simclr", "vrns", "lr", "neg_sim_mean", "neg_sim_var", "images_per_s"):
        assert key in metrics
    assert metrics["loss"] == pytest.approx(metrics["simclr"] + 30 * metrics["vrns"], rel=1e-6)
    with pytest.raises(ValueError, match="already holds a run"):
        pretrain(config)
    with pytest.raises(ValueError, match="different config.*epochs"):
        pretrain(tiny_config(tmp_path, epochs=2), resume="last")
    assert len(pretrain(config, overwrite=True).history) == 1
