"""A run killed after epoch k, or in the middle of an epoch, and resumed ends exactly where an
uninterrupted run ends; SIGTERM / SIGINT stop it gracefully at a checkpoint; checkpoints are
atomic, and a corrupt one is reported while the previous one survives."""

import errno
import json
import os
import signal

import pytest
import torch

import contrastkit.train.loop as loop
from contrastkit.data import load_dataset, pretrain_split
from contrastkit.train import (
    RunFolderError,
    TrainingStopped,
    load_checkpoint,
    pretrain,
    save_checkpoint,
)
from contrastkit.train.batches import local_batches
from contrastkit.train.progress import MEASURED
from contrastkit.train.stopping import stop_requests
from tests.train.tiny import tiny_config


class Killed(Exception):
    pass


def kill_after(epochs_completed):
    def callback(completed, metrics):
        if completed == epochs_completed:
            raise Killed
    return callback


def steps_per_epoch(config) -> int:
    dataset = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir)
    return len(local_batches(len(dataset), config.batch_size, config.seed, epoch=0))


def assert_same_weights(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def without_timing(metrics):
    return [{k: v for k, v in m.items() if k not in MEASURED}
            for m in metrics]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted")
    return pretrain(tiny_config(root))


def test_killed_then_resumed_run_matches_the_uninterrupted_run(tmp_path, uninterrupted):
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    assert load_checkpoint(config.run_dir)["epochs_completed"] == 1
    resumed = pretrain(config, resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert without_timing(resumed.history) == without_timing(uninterrupted.history)
    last = load_checkpoint(config.run_dir)
    reference = load_checkpoint(uninterrupted.run_dir)
    assert_same_weights(last["model"], reference["model"])
    assert torch.equal(last["augment_rng"], reference["augment_rng"])
    assert (config.run_dir / "curves.png").stat().st_size > 1000


def test_killed_mid_epoch_resumes_from_the_mid_epoch_checkpoint_exactly(tmp_path, monkeypatch,
                                                                       uninterrupted):
    """Checkpoints every 4 steps; the process dies during step 7 of epoch 1 (11 steps per
    epoch on digits). The resumed run skips the 4 steps done, keeps the epoch's running sums,
    and ends bitwise where the uninterrupted run (epoch-end checkpoints only) ends."""
    config = tiny_config(tmp_path, checkpoint_every=4)
    real_step, calls = loop.train_step, []

    def dies_in_step_7_of_epoch_1(*args):
        calls.append(1)
        if len(calls) == steps_per_epoch(config) + 7:
            raise Killed
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", dies_in_step_7_of_epoch_1)
    with pytest.raises(Killed):
        pretrain(config)
    monkeypatch.undo()
    checkpoint = load_checkpoint(config.run_dir)
    assert (checkpoint["epochs_completed"], checkpoint["step"]) == (1, 4)
    assert len(checkpoint["epoch_sums"]) > 0
    resumed = pretrain(config.with_overrides({"checkpoint_every": 0}), resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert without_timing(resumed.history) == without_timing(uninterrupted.history)


@pytest.mark.signals
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_epoch_checkpoints_that_step_and_stops(tmp_path, monkeypatch, uninterrupted,
                                                             signal_number):
    """SIGTERM (a scheduler's notice) or SIGINT (Ctrl-C) arrives during step 3 of epoch 1: the
    step completes, a checkpoint is written at it, TrainingStopped is raised and the signal
    handlers are restored; resuming ends bitwise where the uninterrupted run ends."""
    config = tiny_config(tmp_path)
    real_step, calls = loop.train_step, []

    def signalled_in_step_3_of_epoch_1(*args):
        calls.append(1)
        if len(calls) == steps_per_epoch(config) + 3:
            signal.raise_signal(signal_number)  # to this thread: delivered at once
        return real_step(*args)

    handlers_before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(loop, "train_step", signalled_in_step_3_of_epoch_1)
    with pytest.raises(TrainingStopped, match=r"after step 3/\d+ of epoch 2.*--resume") as stop:
        pretrain(config)
    monkeypatch.undo()
    assert stop.value.signal_number == signal_number
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers_before
    checkpoint = load_checkpoint(config.run_dir)
    assert (checkpoint["epochs_completed"], checkpoint["step"]) == (1, 3)
    resumed = pretrain(config, resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert without_timing(resumed.history) == without_timing(uninterrupted.history)


@pytest.mark.signals
def test_a_second_sigint_interrupts_at_once():
    """The second SIGINT goes to the handler that was there before (Python's, which raises
    KeyboardInterrupt). The test installs that handler itself: a process started in the
    background by a shell inherits SIGINT ignored, and Python then keeps ignoring it."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with stop_requests(torch.device("cpu")) as requested:
            signal.raise_signal(signal.SIGINT)
            assert requested() == signal.SIGINT
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)


def test_corrupt_last_checkpoint_is_reported_and_previous_survives(tmp_path, uninterrupted):
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(2)])
    last = config.run_dir / "last.pt"
    last.write_bytes(last.read_bytes()[:1000])  # a torn write
    with pytest.raises(ValueError, match=r"corrupt.*previous.pt.*resume=\"previous\""):
        pretrain(config, resume="last")
    assert load_checkpoint(config.run_dir, "previous")["epochs_completed"] == 1
    resumed = pretrain(config, resume="previous")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())


def test_a_full_disk_leaves_both_checkpoints_and_no_temporary_file(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, {"epoch": 4})
    save_checkpoint(tmp_path, {"epoch": 5})

    def failing_save(state, handle):
        handle.write(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(RunFolderError, match=r"cannot write checkpoint .*: the disk is full"):
        save_checkpoint(tmp_path, {"epoch": 6})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt", "previous.pt"]
    assert load_checkpoint(tmp_path)["epoch"] == 5
    assert load_checkpoint(tmp_path, "previous")["epoch"] == 4


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
    with pytest.raises(ValueError, match="different config.*temperature"):
        pretrain(tiny_config(tmp_path, epochs=1, temperature=0.5), resume="last")
    assert len(pretrain(config, overwrite=True).history) == 1


def test_a_checkpoint_of_the_earlier_format_is_one_clear_error(tmp_path):
    """Checkpoints written before completed-epoch counting had ``epoch`` (0-based) instead of
    ``epochs_completed``: loading one says so instead of failing later with a KeyError."""
    save_checkpoint(tmp_path, {"epoch": 4, "step": 12, "model": {}})
    with pytest.raises(ValueError, match="earlier contrastkit .* overwrite=True"):
        load_checkpoint(tmp_path)


def test_a_run_saved_before_a_setting_existed_resumes_with_its_default(tmp_path, uninterrupted):
    """A config.yaml written by an earlier contrastkit lacks the settings added since (here
    the loggers' and AdamW's): they had their defaults, so the run resumes and ends as the
    uninterrupted one."""
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    saved = config.run_dir / "config.yaml"
    lines = saved.read_text().splitlines(keepends=True)
    added_later = ("logger:", "log_every:", "adamw_beta1:", "adamw_eps:")
    saved.write_text("".join(line for line in lines if not line.startswith(added_later)))
    resumed = pretrain(config, resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())


@pytest.mark.parametrize("saved, resumed", [(0.3, None), (None, 0.3)])
def test_an_unset_base_lr_and_its_default_resume_each_other(tmp_path, saved, resumed):
    """A run saved before base_lr could be unset holds 0.3, SGD's default: resuming it with
    base_lr unset is the same run, and the other way round. Another number is not."""
    pretrain(tiny_config(tmp_path, epochs=1, base_lr=saved))
    text = (tiny_config(tmp_path).run_dir / "config.yaml").read_text()
    assert f"base_lr: {'null' if saved is None else saved}\n" in text
    run = pretrain(tiny_config(tmp_path, epochs=2, base_lr=resumed), resume="last")
    assert len(run.history) == 2
    with pytest.raises(ValueError, match="different config.*base_lr"):
        pretrain(tiny_config(tmp_path, epochs=3, base_lr=0.2), resume="last")
