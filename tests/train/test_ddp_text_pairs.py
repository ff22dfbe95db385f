"""task=text_pairs under torch.distributed (gloo, CPU, two processes): an epoch computes what one
process computes on the global batch, with the rows' negatives as a pool (gathered like the
batch) or each anchor's own (kept with its row), plainly and by gradient caching."""

import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit.train import load_checkpoint, pretrain
from tests.ports import free_port
from tests.train.tiny_text import tiny_text_config


def pretrain_worker(rank: int, world_size: int, port: int, config) -> None:
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
@pytest.mark.parametrize("changes", [{"text_negatives": "pool"}, {"text_negatives": "own"},
                                     {"text_negatives": "pool", "grad_cache_chunk": 4}])
def test_two_process_text_pair_epoch_matches_one_process(tmp_path, changes, float64):
    settings = {"epochs": 1, "text_dropout": 0.0, **changes}
    single = pretrain(tiny_text_config(tmp_path / "single", **settings))
    config = tiny_text_config(tmp_path / "ddp", **settings)
    mp.spawn(pretrain_worker, args=(2, free_port(), config), nprocs=2, join=True)
    parallel = load_checkpoint(config.run_dir)["model"]
    for key, value in single.encoder.state_dict().items():
        scale = max(1.0, value.abs().max().item())
        assert (parallel[key] - value).abs().max().item() <= 1e-9 * scale, key
    line = json.loads((config.run_dir / "metrics.jsonl").read_text())
    assert single.history[0]["loss"] == pytest.approx(line["loss"], rel=1e-12)
