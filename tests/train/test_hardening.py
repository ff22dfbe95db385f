"""A training run never hides a failure and never loses a good checkpoint: divergence, a run
folder in use, a corrupt or non-finite checkpoint, a full disk, bad settings, extending a run."""

import errno
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

import contrastkit.train as train
import contrastkit.train.loop as loop
from contrastkit.cli import main
from contrastkit.train import (
    PretrainConfig,
    RunFolderError,
    TrainingDiverged,
    WarmupCosine,
    load_checkpoint,
    load_config,
    pretrain,
    save_checkpoint,
)
from tests.train.test_resume import Killed, kill_after, steps_per_epoch
from tests.train.tiny import tiny_config

CLI_SETTINGS = ["name=cli", "epochs=1", "batch_size=128", "projector_hidden=32",
                "progress=false", "device=cpu"]


def spoil(kind: str):
    """A function that makes ``kind`` non-finite in the training step it is applied after."""
    def parameter(model, values):
        model.backbone[0].weight.data[0] = math.inf

    def buffer(model, values):
        model.projector[1].running_var.fill_(math.nan)

    def gradient(model, values):
        model.projector[0].weight.grad.fill_(math.nan)
        model.projector[0].weight.data.fill_(math.nan)  # what the step makes of it

    def loss(model, values):
        values["loss"] = math.nan

    return {"parameter": parameter, "buffer": buffer, "gradient": gradient, "loss": loss}[kind]


@pytest.mark.parametrize("kind, named", [
    ("loss", "the loss"), ("gradient", "the gradient of projector.0.weight"),
    ("parameter", "parameter backbone.0.weight"), ("buffer", "buffer projector.1.running_var"),
])
def test_divergence_stops_at_once_saying_where_and_what_and_keeps_the_checkpoints(
        tmp_path, monkeypatch, kind, named):
    """A NaN or infinity appears in step 3 of epoch 2 (checkpoints every 2 steps): the run
    stops at that step naming it, and the checkpoints are those of step 2, finite."""
    config = tiny_config(tmp_path, checkpoint_every=2)
    real_step, calls, spoiled = loop.train_step, [], spoil(kind)

    def step(ctx, images, labels):
        values = real_step(ctx, images, labels)
        calls.append(1)
        if len(calls) == steps_per_epoch(config) + 3:
            spoiled(ctx.model, values)
        return values

    monkeypatch.setattr(loop, "train_step", step)
    with pytest.raises(TrainingDiverged, match=rf"step 3/\d+ of epoch 2: {named} .*base_lr"
                       ) as diverged:
        pretrain(config)
    assert (diverged.value.epoch, diverged.value.step) == (2, 3)
    last, previous = load_checkpoint(config.run_dir), load_checkpoint(config.run_dir, "previous")
    assert (last["epochs_completed"], last["step"]) == (1, 2)
    assert (previous["epochs_completed"], previous["step"]) == (1, 0)
    lines = (config.run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epochs_completed"] for line in lines] == [1]


def test_a_huge_learning_rate_exits_1_with_advice_and_no_non_finite_checkpoint(tmp_path, capsys):
    code = main(["pretrain", f"runs_dir={tmp_path}", *CLI_SETTINGS, "epochs=2", "base_lr=1e6"])
    error = capsys.readouterr().err
    assert code == 1
    assert "training diverged" in error and "base_lr" in error and "warmup_epochs" in error
    assert "Traceback" not in error and len(error.strip().splitlines()) == 1
    for name in ("last", "previous"):
        if (tmp_path / "cli" / f"{name}.pt").exists():
            load_checkpoint(tmp_path / "cli", name)  # finite, or it would raise


def test_non_finite_checkpoints_are_neither_written_nor_loaded(tmp_path):
    save_checkpoint(tmp_path, {"model": {"w": torch.ones(2)}})
    with pytest.raises(ValueError, match=r"refusing to write .*model\.w is not finite"):
        save_checkpoint(tmp_path, {"model": {"w": torch.tensor([1.0, math.nan])}})
    assert torch.equal(load_checkpoint(tmp_path)["model"]["w"], torch.ones(2))
    torch.save({"model": {"bn.running_var": torch.tensor([math.inf])}}, tmp_path / "last.pt")
    with pytest.raises(ValueError, match=r"last\.pt holds non-finite .*model\.bn\.running_var"):
        load_checkpoint(tmp_path)


def test_evaluate_refuses_a_non_finite_checkpoint(tmp_path, capsys):
    config = tiny_config(tmp_path, epochs=1)
    pretrain(config)
    state = load_checkpoint(config.run_dir)
    state["model"]["projector.1.running_mean"].fill_(math.nan)
    torch.save(state, config.run_dir / "last.pt")
    assert main(["evaluate", str(config.run_dir), "--device", "cpu"]) == 2
    error = capsys.readouterr().err
    assert "non-finite" in error and "projector.1.running_mean" in error
    assert not (config.run_dir / "eval.json").exists()


LOCK_HOLDER = textwrap.dedent("""
    import sys, time
    from contrastkit.train.run_folder import run_lock
    with run_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(600)
""")


def test_a_run_folder_in_use_is_refused_until_its_holder_dies(tmp_path):
    config = tiny_config(tmp_path, epochs=1)
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(config.run_dir)],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunFolderError, match=rf"in use .*process {holder.pid}\b"):
            pretrain(config)
        assert not (config.run_dir / "config.yaml").exists()
    finally:
        holder.send_signal(signal.SIGKILL)  # a killed holder leaves its lock file behind
        holder.wait()
    assert len(pretrain(config).history) == 1


def test_resuming_from_previous_never_rotates_a_corrupt_last_over_it(tmp_path):
    config = tiny_config(tmp_path)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(2)])
    last = config.run_dir / "last.pt"
    last.write_bytes(last.read_bytes()[:1000])  # a torn write
    with pytest.raises(Killed):
        pretrain(config, resume="previous", callbacks=[kill_after(2)])
    assert load_checkpoint(config.run_dir)["epochs_completed"] == 2
    assert load_checkpoint(config.run_dir, "previous")["epochs_completed"] == 1


@pytest.mark.parametrize("change, match", [
    ({"dataset": "cifar10"}, "cifar"), ({"backbone": "vgg"}, "backbone"),
    ({"batch_size": 4096}, "batch_size"),
    pytest.param({"device": "cuda"}, "no CUDA device", marks=pytest.mark.skipif(
        torch.cuda.is_available(), reason="this machine has CUDA")),
])
def test_a_run_that_fails_validation_creates_nothing(tmp_path, change, match):
    config = tiny_config(tmp_path / "runs", data_dir=str(tmp_path / "no-data"), **change)
    with pytest.raises((ValueError, FileNotFoundError), match=match):  # the data is missing
        pretrain(config)
    assert not (tmp_path / "runs").exists()


def test_overwrite_removes_the_old_runs_files_and_keeps_the_users(tmp_path):
    config = tiny_config(tmp_path, epochs=1)
    pretrain(config)
    (config.run_dir / "eval.json").write_text("{}")
    (config.run_dir / "notes.txt").write_text("mine")
    (config.run_dir / "previous.pt").write_bytes(b"stale")
    pretrain(config, overwrite=True)
    assert not (config.run_dir / "eval.json").exists()
    assert not (config.run_dir / "previous.pt").exists()
    assert (config.run_dir / "notes.txt").read_text() == "mine"


def test_a_finished_run_is_extended_on_the_longer_schedule_then_reported_complete(
        tmp_path, capsys):
    settings = [f"runs_dir={tmp_path}", *CLI_SETTINGS, "warmup_epochs=1"]
    assert main(["pretrain", *settings]) == 0
    assert main(["pretrain", *settings, "epochs=2", "--resume"]) == 0
    capsys.readouterr()
    run_dir = tmp_path / "cli"
    history = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["epochs_completed"] for m in history] == [1, 2]
    config = load_config(run_dir / "config.yaml")
    assert config.epochs == 2 and load_checkpoint(run_dir)["epochs_completed"] == 2
    steps = steps_per_epoch(config)
    schedule = WarmupCosine(config.warmup_steps(steps), 2 * steps)
    assert history[1]["lr"] == pytest.approx(config.lr * schedule(2 * steps - 1))
    assert main(["pretrain", *settings, "epochs=2", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "already complete (2/2 epochs)" in out and "nan" not in out
    assert main(["pretrain", *settings, "--resume"]) == 2  # epochs=1 < 2
    assert "epochs can only grow" in capsys.readouterr().err


@pytest.mark.parametrize("words, resume, overwrite", [
    (["--resume", "name=X"], "last", False),
    (["name=X", "--resume"], "last", False),
    (["--resume", "previous", "name=X"], "previous", False),
    (["name=X", "--resume", "previous"], "previous", False),
    (["name=X", "--resume", "last", "epochs=7"], "last", False),
    (["--resume", "run.yaml", "name=X"], "last", False),
    (["name=X", "run.yaml", "--resume"], "last", False),
    (["run.yaml", "--overwrite", "name=X"], None, True),
    (["--overwrite", "name=X", "run.yaml"], None, True),
])
def test_options_settings_and_config_file_work_in_any_order(tmp_path, monkeypatch, words,
                                                             resume, overwrite):
    (tmp_path / "run.yaml").write_text("epochs: 7\n")
    monkeypatch.chdir(tmp_path)
    calls = []

    def fake_pretrain(config, resume=None, overwrite=False):
        calls.append((config.name, resume, overwrite))
        return loop.PretrainResult(config.run_dir, None, [])

    monkeypatch.setattr(train, "pretrain", fake_pretrain)
    assert main(["pretrain", *words]) == 0
    assert calls == [("X", resume, overwrite)]


def test_resume_name_resumes_that_run(tmp_path, capsys):
    assert main(["pretrain", f"runs_dir={tmp_path}", *CLI_SETTINGS, "epochs=2"]) == 0
    assert main(["pretrain", "--resume", f"runs_dir={tmp_path}", *CLI_SETTINGS,
                 "epochs=2"]) == 0
    assert "already complete (2/2 epochs)" in capsys.readouterr().out


def failing_write_text(names):
    real = pathlib.Path.write_text

    def write_text(self, *args, **kwargs):
        if any(name in self.name for name in names):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)
    return write_text


@pytest.mark.parametrize("name", ["config.yaml", "metrics.jsonl"])
def test_a_full_disk_is_one_clear_line_and_leaves_no_temporary_file(tmp_path, monkeypatch,
                                                                     capsys, name):
    monkeypatch.setattr(pathlib.Path, "write_text", failing_write_text([name]))
    assert main(["pretrain", f"runs_dir={tmp_path}", *CLI_SETTINGS]) == 1
    error = capsys.readouterr().err
    assert f"{name}: the disk is full" in error and len(error.strip().splitlines()) == 1
    assert not list((tmp_path / "cli").glob(".*.tmp"))


def test_one_epoch_runs_with_the_default_warm_up_capped_at_half_the_run():
    one = load_config(None, ["epochs=1"])
    assert one.warmup_epochs == PretrainConfig().warmup_epochs
    assert one.warmup_steps(11) == 5
    assert PretrainConfig().warmup_steps(11) == PretrainConfig().warmup_epochs * 11


@pytest.mark.parametrize("settings, expected", [
    (["device=potato"], "device must be auto, cpu, cuda, cuda:<index> or mps, got 'potato'"),
    (["runs_dir=a_file"], "runs_dir must be a folder, but a_file is a file"),
    (["broken.yaml"], "broken.yaml is not valid YAML at line 2"),
])
def test_bad_input_is_one_or_two_lines_exit_2_and_creates_nothing(tmp_path, monkeypatch,
                                                                   capsys, settings, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("")
    (tmp_path / "broken.yaml").write_text("epochs: 3\nloss: simclr: dcl\n")
    before = sorted(tmp_path.iterdir())
    assert main(["pretrain", *CLI_SETTINGS, *settings]) == 2
    error = capsys.readouterr().err
    assert expected in error and 1 <= len(error.strip().splitlines()) <= 2
    assert sorted(tmp_path.iterdir()) == before


def test_an_unwritable_runs_dir_is_reported_before_training(tmp_path, monkeypatch, capsys):
    def refuse(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(pathlib.Path, "mkdir", refuse)
    assert main(["pretrain", f"runs_dir={tmp_path / 'runs'}", *CLI_SETTINGS]) == 1
    error = capsys.readouterr().err
    assert "cannot create the run folder" in error and "Permission denied" in error
