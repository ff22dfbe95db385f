"""task=image_text under torch.distributed (gloo, CPU, two processes): an epoch of the two towers
computes what one process computes on the global batch, and gradient caching through a
DDP-wrapped two-tower model (which replays one tower at a time, so the other's parameters are
unused in that backward) leaves the gradient of the global batch's loss."""

import json
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit import losses
from contrastkit.train import load_checkpoint, pretrain
from contrastkit.train.grad_cache import grad_cache
from tests.ports import free_port
from tests.train.tiny_captions import TinyTowers, tiny_image_text_config

ROWS, CHUNK = 8, 2


def _join(rank: int, world_size: int, port: int) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "RANK": str(rank), "LOCAL_RANK": str(rank),
                       "WORLD_SIZE": str(world_size)})
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)


def pretrain_worker(rank: int, world_size: int, port: int, config) -> None:
    _join(rank, world_size, port)
    try:
        pretrain(config)
    finally:
        dist.destroy_process_group()


def grad_cache_worker(rank: int, world_size: int, port: int, out: str, loss: str) -> None:
    _join(rank, world_size, port)
    dist.init_process_group("gloo")
    try:
        towers, images, tokens = _inputs()
        model = torch.nn.parallel.DistributedDataParallel(towers, find_unused_parameters=True)
        local = slice(rank * ROWS // world_size, (rank + 1) * ROWS // world_size)
        criterion = losses.build(loss, {}, distributed=True)
        grad_cache(model, criterion, images[local], tokens[local], CHUNK,
                   towers=("image", "text"))
        if rank == 0:
            torch.save({name: p.grad for name, p in towers.named_parameters()}, out)
    finally:
        dist.destroy_process_group()


def _inputs():
    torch.manual_seed(0)
    towers = TinyTowers().double()
    return towers, torch.randn(ROWS, 3, 2, 2), torch.randint(0, 10, (ROWS, 5))


@pytest.mark.slow
def test_two_process_image_text_epoch_matches_one_process(tmp_path, float64):
    settings = {"epochs": 1, "warmup_epochs": 0, "loss": "siglip"}
    single = pretrain(tiny_image_text_config(tmp_path / "single", **settings))
    config = tiny_image_text_config(tmp_path / "ddp", **settings)
    mp.spawn(pretrain_worker, args=(2, free_port(), config), nprocs=2, join=True)
    parallel = load_checkpoint(config.run_dir)["model"]
    for key, value in single.encoder.state_dict().items():
        scale = max(1.0, value.abs().max().item())
        assert (parallel[key] - value).abs().max().item() <= 1e-9 * scale, key
    line = json.loads((config.run_dir / "metrics.jsonl").read_text())
    assert single.history[0]["loss"] == pytest.approx(line["loss"], rel=1e-12)
    assert single.history[0]["siglip_scale"] == pytest.approx(line["siglip_scale"], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["info_nce", "siglip"])
def test_grad_cache_through_ddp_towers_is_the_global_gradient(tmp_path, loss, float64):
    towers, images, tokens = _inputs()
    losses.build(loss, {})(towers(images, tower="image"), towers(tokens, tower="text")
                           ).backward()
    out = tmp_path / "grads.pt"
    mp.spawn(grad_cache_worker, args=(2, free_port(), str(out), loss), nprocs=2, join=True)
    cached = torch.load(out)
    for name, parameter in towers.named_parameters():
        torch.testing.assert_close(cached[name], parameter.grad, rtol=1e-10, atol=1e-12)
