"""``pretrain online_probe=true``: the weights and every random state are bit for bit those of a
run without it; each epoch's metrics, progress line and curves carry its accuracies (the kNN's
is the offline kNN's of the same encoder); a resumed run continues its head; a run that cannot
be probed is refused in one line before its folder exists."""

import dataclasses

import pytest
import torch

from contrastkit.cli import main
from contrastkit.data import DATASETS, load_dataset
from contrastkit.data.images import ImageTensorDataset
from contrastkit.data.registry import DatasetSpec
from contrastkit.evaluate import extract_features, knn_accuracy
from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.plots import curves_figure
from contrastkit.train.progress import MEASURED, ONLINE_ACCURACIES, format_epoch
from tests.train.own_objects import Blobs, jitter, mlp
from tests.train.test_resume import Killed, assert_same_weights, kill_after
from tests.train.tiny import tiny_config

ONLINE = (*ONLINE_ACCURACIES, "online_probe_seconds")
pytestmark = pytest.mark.usefixtures("no_curves")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two epochs of the tiny run without and with the probe: the two results."""
    root = tmp_path_factory.mktemp("online")
    return {probed: pretrain(tiny_config(root, name=f"probe-{probed}", epochs=2,
                                         online_probe=probed))
            for probed in (False, True)}


def test_the_probe_changes_no_weight_no_metric_and_no_random_state(runs):
    plain, probed = runs[False], runs[True]
    assert_same_weights(probed.encoder.state_dict(), plain.encoder.state_dict())
    last, reference = load_checkpoint(probed.run_dir), load_checkpoint(plain.run_dir)
    assert_same_weights(last["optimizer"]["state"][0], reference["optimizer"]["state"][0])
    assert torch.equal(last["augment_rng"], reference["augment_rng"])
    assert torch.equal(last["rng"]["torch"], reference["rng"]["torch"])
    assert [{k: v for k, v in m.items() if k not in MEASURED + ONLINE} for m in probed.history] \
        == [{k: v for k, v in m.items() if k not in MEASURED} for m in plain.history]


def test_every_epoch_records_the_probe_and_its_knn_is_the_offline_knn(runs):
    probed = runs[True]
    assert all(set(ONLINE) <= set(m) for m in probed.history)
    assert not any(set(ONLINE) & set(m) for m in runs[False].history)
    for metrics in probed.history:
        assert all(0 <= metrics[key] <= 100 for key in ONLINE_ACCURACIES)
    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    train_x, train_y = extract_features(probed.encoder, train)
    test_x, test_y = extract_features(probed.encoder, test)
    offline = knn_accuracy(train_x, train_y, test_x, test_y, 10)
    assert probed.history[-1]["online_knn_top1"] == offline["top1"]
    assert "online_probe" in load_checkpoint(probed.run_dir)
    assert "online_probe" not in load_checkpoint(runs[False].run_dir)


def test_a_resumed_run_continues_the_probe_as_if_it_had_not_stopped(tmp_path, runs):
    config = tiny_config(tmp_path, name="probe-True", epochs=2, online_probe=True)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    resumed = pretrain(config, resume="last")
    assert [{k: m[k] for k in ONLINE_ACCURACIES} for m in resumed.history] \
        == [{k: m[k] for k in ONLINE_ACCURACIES} for m in runs[True].history]
    head = load_checkpoint(config.run_dir)["online_probe"]
    reference = load_checkpoint(runs[True].run_dir)["online_probe"]
    assert head["epochs_probed"] == reference["epochs_probed"] == 2
    assert_same_weights(head["head"], reference["head"])


def test_the_probe_may_be_turned_on_when_a_run_resumes(tmp_path):
    config = tiny_config(tmp_path, epochs=2)
    with pytest.raises(Killed):
        pretrain(config, callbacks=[kill_after(1)])
    resumed = pretrain(dataclasses.replace(config, online_probe=True), resume="last")
    assert "online_linear_top1" not in resumed.history[0]
    assert "online_linear_top1" in resumed.history[1]
    assert load_checkpoint(config.run_dir)["online_probe"]["epochs_probed"] == 1


def _unlabeled_digits(root, split, download):
    digits = load_dataset("digits", split)
    info = dataclasses.replace(digits.info, num_classes=0)
    return ImageTensorDataset(digits.images, torch.full_like(digits.labels, -1), info)


if "unlabeled_digits" not in DATASETS:
    DATASETS.register("unlabeled_digits", DatasetSpec(load=_unlabeled_digits))


@pytest.mark.parametrize("own, message", [
    (False, "online_probe=true needs class labels, and dataset=unlabeled_digits has none"),
    (True, "online_probe=true scores a built-in dataset's test split"),
])
def test_a_run_that_cannot_be_probed_is_refused_before_its_folder_exists(tmp_path, own,
                                                                         message):
    if own:
        config = PretrainConfig(runs_dir=str(tmp_path), name="own", batch_size=64,
                                device="cpu", progress=False, online_probe=True)
        objects = {"dataset": Blobs(), "encoder": mlp(), "augment": jitter}
    else:
        config = tiny_config(tmp_path, online_probe=True, dataset="unlabeled_digits")
        objects = {}
    with pytest.raises(ValueError, match=message):
        pretrain(config, **objects)
    assert not config.run_dir.exists()


def test_image_text_refuses_the_probe_in_one_line(tmp_path, capsys):
    with pytest.raises(ValueError, match="task=image_text trains two towers"):
        PretrainConfig(task="image_text", dataset="captioned_shapes", online_probe=True)
    code = main(["pretrain", "task=image_text", "online_probe=true", f"runs_dir={tmp_path}"])
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error
    assert error.startswith("contrastkit pretrain: error: online_probe=true probes one encoder")


METRICS = {"epochs_completed": 3, "lr": 0.1, "loss": 2.5, "simclr": 1.5, "vrns": 0.03,
           "pos_sim_mean": 0.8, "neg_sim_mean": 0.01, "neg_sim_var": 0.03,
           "images_per_s": 900.0, "epoch_seconds": 1.6}
PROBED = {**METRICS, "online_linear_top1": 96.25, "online_knn_top1": 93.75,
          "online_probe_seconds": 0.4}


def test_the_progress_line_shows_the_probe_and_not_as_a_loss_part():
    line = format_epoch(PROBED, 5)
    assert "online top-1 linear 96.2 % kNN 93.8 %" in line
    assert "(simclr 1.5000, vrns 0.0300)" in line
    assert "online" not in format_epoch(METRICS, 5)
    retrieval = format_epoch({**METRICS, "online_ndcg10": 0.4321}, 5)
    assert "online nDCG@10 0.432" in retrieval and "online_ndcg10" not in retrieval


def test_the_curves_plot_the_probe_when_the_run_has_one():
    import matplotlib

    matplotlib.use("Agg")
    probed = curves_figure([PROBED, {**PROBED, "epochs_completed": 4}], ["loss"])
    panel = probed.axes[-1]
    assert [line.get_label() for line in panel.get_lines()] == ["linear", "kNN"]
    assert list(panel.get_lines()[0].get_ydata()) == [96.25, 96.25]
    assert len(curves_figure([METRICS], ["loss"]).axes) == len(probed.axes) - 1
