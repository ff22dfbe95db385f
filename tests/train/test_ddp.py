"""Two processes (gloo, CPU) training one tiny epoch compute what one process computes on the
same global batch: the loss is that of the global batch (as per-process shares where the loss
supports them, else on the gathered batch), BatchNorm uses the global statistics, and each
process augments its slice with its rows of the global augmentation draw."""

import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit.train import load_checkpoint, pretrain
from tests.ports import free_port
from tests.train.tiny import tiny_config


def worker(rank: int, world_size: int, port: int, config) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "RANK": str(rank), "LOCAL_RANK": str(rank),
                       "WORLD_SIZE": str(world_size)})
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    try:
        pretrain(config)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:SimilarityMonitor")  # a window of the short run's collapse
@pytest.mark.parametrize("loss", [
    "simclr",  # + VRNS: both compute per-process shares (local rows against the gathered batch)
    "hcl",     # no share form: every process computes the loss of the gathered batch
])
def test_two_process_epoch_matches_one_process_on_the_global_batch(tmp_path, loss, float64):
    settings = {"epochs": 1, "batch_size": 256, "warmup_epochs": 0, "loss": loss, "log_every": 2}
    single = pretrain(tiny_config(tmp_path / "single", **settings))
    config = tiny_config(tmp_path / "ddp", **settings)
    mp.spawn(worker, args=(2, free_port(), config), nprocs=2, join=True)
    parallel = load_checkpoint(config.run_dir)["model"]
    expected = single.encoder.state_dict()
    initial = _initial_weights(config)
    # in float64 the two runs differ only by round-off (another summation order in the gathered
    # BatchNorm and the all-reduce), amplified over the epoch's steps but still far below 1e-9
    # of each tensor's scale on any machine; one epoch moves the weights by over 1e-2, and a
    # wrong gradient errs on that scale
    for key, value in parallel.items():
        scale = max(1.0, expected[key].abs().max().item())
        difference = (value - expected[key]).abs().max().item()
        assert difference <= 1e-9 * scale, key
        if key.endswith("weight"):
            moved = (expected[key] - initial[key]).abs().max()
            assert moved > 1e-2, key
    parallel_metrics = (config.run_dir / "metrics.jsonl").read_text()
    assert '"neg_sim_var"' in parallel_metrics
    assert single.history[0]["loss"] == pytest.approx(
        json.loads(parallel_metrics)["loss"], rel=1e-12)
    # the monitor sees the global batch and its classes, gathered in the processes' order
    for key in ("neg_above_pos_share", "neg_above_band_share"):
        assert json.loads(parallel_metrics)[key] == pytest.approx(single.history[0][key],
                                                                  abs=1e-9), key
    assert _same_class_counts(config.run_dir) == _same_class_counts(single.run_dir)
    assert _same_class_counts(config.run_dir)[-1] > 0


def _same_class_counts(run_dir):
    """The same-class negative pairs of each window of the run's log.csv."""
    import csv

    with open(run_dir / "log.csv", newline="") as handle:
        return [float(row["monitor/negative_pairs_same_class"]) for row in csv.DictReader(handle)
                if row.get("monitor/negative_pairs_same_class")]



def _initial_weights(config):
    from contrastkit.data import load_dataset
    from contrastkit.models import build_encoder
    from contrastkit.train.checkpoint import seed_everything as _seed_everything

    info = load_dataset("digits", "train").info
    _seed_everything(config.seed)
    return build_encoder(config.backbone, 1, info.mean, info.std, config.projector_hidden,
                         config.projector_out).state_dict()
