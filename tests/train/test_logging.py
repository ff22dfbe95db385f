"""The trainer's similarity statistics come from the SimilarityMonitor, whose windows and each
epoch's metrics go to the loggers (CSV, TensorBoard read back with its EventAccumulator, a fake
W&B); a run killed mid-window and resumed logs every step once; loggers close on every exit."""

import csv
import json
import sys
import types
import warnings

import numpy as np
import pytest
import torch

import contrastkit.train.loop as loop
import contrastkit.train.monitoring as monitoring
from contrastkit.cli import main
from contrastkit.data import load_dataset, pretrain_split
from contrastkit.geometry import similarity_stats
from contrastkit.geometry.false_negatives import false_negative_stats
from contrastkit.monitor import SimilarityMonitor
from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.loggers import logger_names
from contrastkit.train.progress import MEASURED
from tests.train.test_resume import Killed, kill_after, steps_per_epoch
from tests.train.tiny import tiny_config

TIMING = MEASURED
LOGGED = {"logger": "csv,tensorboard", "log_every": 7, "epochs": 2}


def read_jsonl(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def read_csv(run_dir):
    with open(run_dir / "log.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def read_scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """Every TensorBoard scalar of the run, as (step, value) in the order TensorBoard keeps."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def without_timing(rows):
    return [{k: v for k, v in row.items() if not k.endswith(TIMING)} for row in rows]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return pretrain(tiny_config(tmp_path_factory.mktemp("logged"), **LOGGED))


def test_the_step_statistics_are_the_monitors_of_the_global_batch(tmp_path, monkeypatch):
    """metrics.jsonl's pos_sim_mean, neg_sim_mean, neg_sim_var are the epoch's means of
    similarity_stats of each step's two views, as the monitor fed those views sees them, and
    neg_above_pos_share, neg_above_band_share those of false_negative_stats (the band of the
    dataset size and the batch size); the monitor is fed the batch's digit classes."""
    fed = []

    class Recording(SimilarityMonitor):
        def prepare(self, u, v, labels=None, duplicates=None):  # where the views enter
            fed.append((u.detach().clone(), v.detach().clone(), labels))
            return super().prepare(u, v, labels, duplicates)

    monkeypatch.setattr(monitoring, "SimilarityMonitor", Recording)
    config = tiny_config(tmp_path, epochs=2)
    history = pretrain(config).history
    steps = steps_per_epoch(config)
    assert len(fed) == 2 * steps and fed[0][0].shape[0] == config.batch_size
    n = len(load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir))
    for epoch, metrics in enumerate(history):
        epoch_fed = fed[epoch * steps:(epoch + 1) * steps]
        stats = [similarity_stats(u, v) for u, v, _ in epoch_fed]
        for key, name in (("pos_sim_mean", "positive_mean"), ("neg_sim_mean", "negative_mean"),
                          ("neg_sim_var", "negative_var")):
            expected = np.mean([getattr(s, name) for s in stats])
            assert metrics[key] == pytest.approx(expected, abs=1e-12), key
        false_negatives = [false_negative_stats(u, v, dataset_size=n,
                                                batch_size=config.batch_size, labels=labels)
                           for u, v, labels in epoch_fed]
        for key, name in (("neg_above_pos_share", "negatives_above_positive_share"),
                          ("neg_above_band_share", "negatives_above_band_share")):
            expected = np.mean([stats[name] for stats in false_negatives])
            assert metrics[key] == pytest.approx(expected, abs=1e-12), key
    assert all(labels is not None and labels.shape == (config.batch_size,)
               for _, _, labels in fed)


def test_tensorboard_holds_metrics_jsonl_and_the_monitor_windows(uninterrupted):
    run_dir = uninterrupted.run_dir
    scalars, metrics = read_scalars(run_dir), read_jsonl(run_dir)
    config = tiny_config(run_dir)
    steps = steps_per_epoch(config)
    n = len(load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir))
    for key in metrics[0]:
        assert scalars[f"epoch/{key}"] == [
            ((index + 1) * steps, np.float32(m[key])) for index, m in enumerate(metrics)], key
    windows = [step for step, _ in scalars["monitor/negative_var"]]
    assert windows == list(range(7, 2 * steps + 1, 7))
    assert scalars["monitor/theory_negative_mean"][0][1] == np.float32(-1 / (n - 1))
    assert {"monitor/theory_negative_var_high", "monitor/effective_rank",
            "monitor/negatives_above_positive_share", "monitor/negatives_above_band_share",
            "monitor/negatives_above_positive_same_class"} <= scalars.keys()


def test_csv_holds_the_windows_and_metrics_jsonl(uninterrupted):
    run_dir = uninterrupted.run_dir
    rows, metrics = read_csv(run_dir), read_jsonl(run_dir)
    epochs = [row for row in rows if row["epoch/loss"]]
    assert [{key: float(row[f"epoch/{key}"]) for key in metrics[0]} for row in epochs] == [
        {key: float(value) for key, value in m.items()} for m in metrics]
    scalars = read_scalars(run_dir)
    windows = [row for row in rows if row["monitor/negative_var"]]
    assert [(int(row["step"]), np.float32(row["monitor/negative_var"])) for row in windows] == (
        scalars["monitor/negative_var"])


def test_a_run_killed_mid_window_and_resumed_logs_every_step_once(tmp_path, monkeypatch,
                                                                  uninterrupted):
    """Checkpoints every 4 steps (the last at global step 19 = step 8 of epoch 2, inside the
    window of steps 15-21), killed in global step 22, after logging the window at step 21: the
    resumed run's CSV rows and TensorBoard scalars are the uninterrupted run's, with no step
    missing or repeated."""
    config = tiny_config(tmp_path, checkpoint_every=4, **LOGGED)
    real_step, calls = loop.train_step, []

    def dies_in_step_22(*args):
        calls.append(1)
        if len(calls) == 22:
            raise Killed
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", dies_in_step_22)
    with pytest.raises(Killed):
        pretrain(config)
    monkeypatch.undo()
    assert [int(row["step"]) for row in read_csv(config.run_dir)][-1] == 21
    checkpoint = load_checkpoint(config.run_dir)
    assert (checkpoint["epochs_completed"], checkpoint["step"]) == (1, 8)
    pretrain(config, resume="last")
    assert without_timing(read_csv(config.run_dir)) == without_timing(
        read_csv(uninterrupted.run_dir))
    resumed, expected = read_scalars(config.run_dir), read_scalars(uninterrupted.run_dir)
    assert resumed.keys() == expected.keys()
    for tag in expected:
        if not tag.endswith(TIMING):
            assert resumed[tag] == expected[tag], tag


class FakeWandb(types.ModuleType):
    """What the trainer uses of ``wandb``, recording the calls (no network, no login)."""

    def __init__(self):
        super().__init__("wandb")
        self.inits, self.logged, self.alerts, self.finished = [], [], [], []

    def init(self, **settings):
        self.inits.append(settings)
        return self

    def log(self, values, step):
        self.logged.append((step, dict(values)))

    def alert(self, title, text):
        self.alerts.append((title, text))

    def finish(self, exit_code=0):
        self.finished.append(exit_code)


def test_wandb_gets_the_windows_and_epochs_and_a_resumed_run_continues_its_run(
        tmp_path, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    config = tiny_config(tmp_path, logger="wandb", log_every=7, epochs=1)
    first = pretrain(config)
    (settings,) = fake.inits
    assert settings["resume"] == "allow" and settings["name"] == "tiny"
    assert settings["dir"] == str(config.run_dir) and settings["config"] == config.to_dict()
    steps = [step for step, _ in fake.logged]
    assert steps == [7, steps_per_epoch(config)]
    assert fake.logged[-1][1] == {f"epoch/{k}": v for k, v in first.history[0].items()}
    assert fake.finished == [0]
    pretrain(config.with_overrides({"epochs": 2}), resume="last")
    assert fake.inits[1]["id"] == settings["id"]
    assert not (tmp_path / "tiny" / "log.csv").exists()


def test_loggers_are_closed_when_the_run_fails(tmp_path, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    with pytest.raises(Killed):
        pretrain(tiny_config(tmp_path, logger="wandb,csv"), callbacks=[kill_after(1)])
    assert fake.finished == [1]


def test_wandb_chosen_but_not_installed_is_a_clear_error_before_the_run_folder(tmp_path,
                                                                              monkeypatch,
                                                                              capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    with pytest.raises(ValueError, match="logger=wandb needs .*pip install wandb"):
        pretrain(tiny_config(tmp_path, logger="csv,wandb"))
    assert not (tmp_path / "tiny").exists()
    code = main(["pretrain", f"runs_dir={tmp_path}", "logger=wandb", "device=cpu"])
    error = capsys.readouterr().err
    assert code == 2 and "Traceback" not in error
    assert error.startswith("contrastkit pretrain: error: logger=wandb needs")


@pytest.mark.parametrize("setting, names", [
    ("csv", ("csv",)), ("csv,tensorboard", ("csv", "tensorboard")),
    (" tensorboard , wandb", ("tensorboard", "wandb")), ("none", ()), ("", ()),
])
def test_the_logger_setting_names_several_loggers_or_none(setting, names):
    assert logger_names(setting) == names
    assert PretrainConfig(logger=setting).logger == setting


@pytest.mark.parametrize("overrides, message", [
    (["logger=csv,mlflow"], "logger must be none or distinct names among csv, tensorboard, "
                            "wandb separated by commas .*got 'csv,mlflow'"),
    (["logger=csv,csv"], "logger must be none or distinct names"),
    (["logger=none,csv"], "logger must be none or distinct names"),
    (["log_every=0"], "log_every must be >= 1, got 0"),
])
def test_bad_logging_settings_are_named(overrides, message):
    from contrastkit.train import load_config

    with pytest.raises(ValueError, match=message):
        load_config(None, overrides)


def test_the_yaml_form_of_the_logger_setting(tmp_path):
    from contrastkit.train import load_config

    path = tmp_path / "config.yaml"
    path.write_text("logger: csv,tensorboard\nlog_every: 10\n")
    config = load_config(path)
    assert (config.logger, config.log_every) == ("csv,tensorboard", 10)


@pytest.mark.parametrize("state, warns", [
    ({}, False),  # a checkpoint of an earlier contrastkit: no monitor state
    ({"monitor": {"format": 1, "progress": b"damaged"}}, True),
])
def test_a_checkpoint_without_a_readable_monitor_state_resumes_at_its_step(tmp_path, state,
                                                                          warns):
    config = tiny_config(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = monitoring.RunMonitor(config, 100, 15, state, torch.device("cpu"), True)
    assert run.monitor.step == 15
    said = [str(w.message) for w in caught if "window cannot be restored" in str(w.message)]
    assert len(said) == warns
    assert all("progress cannot be read" in message and "a new window starts at step 15"
               in message for message in said)


def test_a_run_started_again_without_loggers_leaves_none_of_the_old_logs(tmp_path):
    """--overwrite with logger=none: the earlier run's log.csv and event files would describe a
    run that no longer exists."""
    pretrain(tiny_config(tmp_path, logger="csv,tensorboard", epochs=1))
    run_dir = tiny_config(tmp_path).run_dir
    assert (run_dir / "log.csv").exists() and list((run_dir / "tensorboard").iterdir())
    pretrain(tiny_config(tmp_path, logger="none", epochs=1), overwrite=True)
    assert not (run_dir / "log.csv").exists()
    assert not list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
