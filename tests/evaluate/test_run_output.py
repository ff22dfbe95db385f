"""What `contrastkit evaluate` shows and where its results go: stage progress on standard
error, help texts with defaults, and a read-only run folder."""

import argparse
import errno
import os
import pathlib

import pytest

from contrastkit.cli import main
from contrastkit.commands import evaluate as evaluate_command
from contrastkit.evaluate import measure_run, write_results
from contrastkit.train import pretrain

from ..train.tiny import tiny_config

QUICK = ["--knn-k", "20", "--pairs", "200", "--device", "cpu"]
STAGES = ["train features", "test features", "linear probe", "kNN", "pair statistics"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> pathlib.Path:
    """A tiny one-epoch run, shared by the tests of this module (none of them changes it)."""
    return pretrain(tiny_config(tmp_path_factory.mktemp("runs"), epochs=1)).run_dir


def test_stages_are_plain_lines_on_stderr_when_it_is_not_a_terminal(run_dir, capsys):
    assert main(["evaluate", str(run_dir), *QUICK]) == 0
    captured = capsys.readouterr()
    ends = [line.split(": done in")[0] for line in captured.err.splitlines() if ": done in" in line]
    assert ends == STAGES
    assert main(["evaluate", str(run_dir), *QUICK, "--linear-solver", "sgd",
                 "--linear-epochs", "5"]) == 0
    probe = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("linear probe: ") and "training loss" in line]
    assert [line.split(",")[0] for line in probe] == [f"linear probe: {e}/5"
                                                      for e in range(1, 5)]
    assert "linear probe" in captured.out and "done in" not in captured.out
    assert main(["evaluate", str(run_dir), *QUICK, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def refuse_writes_in(folder: pathlib.Path, monkeypatch) -> None:
    """Make opening a file for writing in ``folder`` fail as in a read-only folder (for when
    the tests run as root, whom ``chmod`` does not stop)."""
    real_open = pathlib.Path.open

    def open_(self, mode="r", *args, **kwargs):
        if self.resolve().parent == folder.resolve() and set(mode) & set("wax+"):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", open_)


def test_a_read_only_run_folder_prints_the_results_then_says_what_was_not_written(
        run_dir, capsys, monkeypatch):
    before = sorted(path.name for path in run_dir.iterdir())
    mode = run_dir.stat().st_mode
    run_dir.chmod(0o555)
    try:
        if os.access(run_dir, os.W_OK):  # running as root: simulate what chmod would do
            refuse_writes_in(run_dir, monkeypatch)
        status = main(["evaluate", str(run_dir), *QUICK, "--no-progress"])
    finally:
        run_dir.chmod(mode)
    captured = capsys.readouterr()
    assert status == evaluate_command.NOT_SAVED == 1
    assert "linear probe  top-1" in captured.out and "written to" not in captured.out
    assert captured.err.splitlines() == [
        f"contrastkit evaluate: error: could not write {run_dir / 'eval.json'} (Permission "
        f"denied); the results above are not saved"]
    assert sorted(path.name for path in run_dir.iterdir()) == before  # nothing left behind


def test_a_knn_k_above_the_training_split_is_recorded_and_printed_as_the_k_used(run_dir,
                                                                                capsys):
    """kNN votes with at most every training image: eval.json and the printed line say the k
    used, not the one asked for (issue 39)."""
    import json

    from contrastkit.data import load_dataset
    from contrastkit.train import PretrainConfig, load_checkpoint

    config = PretrainConfig(**load_checkpoint(run_dir, "last")["config"])
    size = len(load_dataset(config.dataset, "train", config.data_dir))
    assert main(["evaluate", str(run_dir), "--knn-k", "1000000000", "--pairs", "20",
                 "--device", "cpu", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"kNN (k={size}, every training image)" in out and "1000000000" not in out
    assert "(1 epoch completed)" in out  # the fixture's one epoch, in the singular
    recorded = json.loads((run_dir / "eval.json").read_text())
    assert recorded["protocol"]["knn_k"] == size


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def refuse(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("contrastkit.evaluate.run.os.replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_results(tmp_path, {"linear_top1": 90.0})
    assert list(tmp_path.iterdir()) == []


def test_every_option_has_a_help_text_with_its_default():
    subparsers = argparse.ArgumentParser().add_subparsers()
    evaluate_command.register(subparsers)
    parser = subparsers.choices["evaluate"]
    text = " ".join(parser.format_help().split())
    options = [action for action in parser._actions
               if action.option_strings and action.dest != "help"]
    assert len(options) >= 7
    for action in options:
        assert action.help, action.dest
        help_text = " ".join(action.help.split())
        if action.default is argparse.SUPPRESS:  # the help says its default itself, once
            assert help_text in text and f"{help_text} (default:" not in text, action.dest
        else:
            assert f"{help_text} (default: {action.default})" in text, action.dest
    assert "(default: None)" not in text  # issue 39: --linear-epochs said "default 100" too


def test_the_evaluation_measures_lmcls_margin_fraction_and_distance_histogram(run_dir):
    """LMCL's Fig. 2 quantities, on the same augmented pairs as the variance: the share of
    negative pairs inside the config's band and the histogram of the pair distances."""
    import torch

    from contrastkit.data import augmentation_for, load_dataset
    from contrastkit.evaluate import augmented_pairs, measure_run
    from contrastkit.geometry import margin_fraction
    from contrastkit.models import build_encoder
    from contrastkit.train import PretrainConfig, load_checkpoint

    results = measure_run(run_dir, knn_k=5, pairs=40, device="cpu", seed=2, progress=False)
    state = load_checkpoint(run_dir, "last")
    config = PretrainConfig(**state["config"])
    train = load_dataset(config.dataset, "train", config.data_dir)
    encoder = build_encoder(config.backbone, train.info.channels, train.info.mean,
                            train.info.std, config.projector_hidden, config.projector_out)
    encoder.load_state_dict(state["model"])
    u, v = augmented_pairs(encoder, train, augmentation_for(config.dataset,
                                                            train.info.image_size),
                           pairs=40, seed=2)
    assert results["margin_fraction"] == margin_fraction(u, config.delta_plus,
                                                         config.delta_minus, v=v)
    histogram = results["distance_histogram"]
    assert histogram["scale"] == "distance" and len(histogram["edges"]) == 51
    assert sum(histogram["counts"]["negative"]) == 40 * 39
    assert sum(histogram["counts"]["positive"]) == 40
    assert torch.isfinite(torch.tensor(results["margin_fraction"]))


def test_each_stage_opens_its_profiler_label(run_dir, monkeypatch):
    """The labels that benchmarks/train_step.py reads where evaluation's time goes from, each
    opened once per stage (recorded here by a spy, without the profiler's cost per operator)."""
    import contrastkit.evaluate.run as run_module

    opened, real = [], run_module.record_function

    def spy(name):
        opened.append(name)
        return real(name)

    monkeypatch.setattr(run_module, "record_function", spy)
    measure_run(run_dir, pairs=100, device="cpu", progress=False)
    assert sorted(opened) == sorted(f"contrastkit/evaluate/{stage}"
                                    for stage in ["setup", *STAGES])


@pytest.mark.slow
def test_each_stage_runs_under_its_profiler_label(run_dir):
    """benchmarks/train_step.py reads where evaluation's time goes from these labels."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        measure_run(run_dir, pairs=100, device="cpu", progress=False)
    labels = {event.key for event in profiler.events()
              if event.key.startswith("contrastkit/evaluate/")}
    assert labels == {f"contrastkit/evaluate/{stage}" for stage in ["setup", *STAGES]}


def test_the_linear_probe_is_recorded_and_epochs_without_sgd_are_refused(run_dir):
    from contrastkit.evaluate import measure_run
    from contrastkit.evaluate.linear import L2_PENALTY

    exact = measure_run(run_dir, knn_k=5, pairs=40, device="cpu", progress=False)
    assert exact["protocol"]["linear_solver"] == "lbfgs"
    assert exact["protocol"]["linear_l2_penalty"] == L2_PENALTY
    sgd = measure_run(run_dir, knn_k=5, pairs=40, device="cpu", progress=False,
                      linear_solver="sgd")
    assert sgd["protocol"]["linear_epochs"] == 100
    with pytest.raises(ValueError, match="linear_epochs=5 would be ignored"):
        measure_run(run_dir, linear_epochs=5, device="cpu", progress=False)
    with pytest.raises(ValueError, match="linear_solver must be one of"):
        measure_run(run_dir, device="cpu", progress=False, linear_solver="adam")
