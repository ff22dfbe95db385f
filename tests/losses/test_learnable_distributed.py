"""Two CPU processes (gloo) with ``distributed=True`` and tensor settings: the mean over the
processes of each one's gradient w.r.t. the temperature (SigLIP: scale and bias) is the
single-process gradient of the global-batch loss, chunked and not. The problem (batch, labels,
layer) is that of tests/test_distributed.py."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit import distributed, losses
from tests.ports import free_port
from tests.test_distributed import LABELS, ROWS, WORLD, _problem

SETTINGS = {"temperature": 0.3}
LOSSES = {
    "simclr": lambda u, v, labels, s, **kw: losses.simclr(u, v, s["temperature"], **kw),
    "info_nce": lambda u, v, labels, s, **kw: losses.info_nce(u, v, s["temperature"], **kw),
    "dcl": lambda u, v, labels, s, **kw: losses.dcl(u, v, s["temperature"], **kw),
    "dhel": lambda u, v, labels, s, **kw: losses.dhel(u, v, s["temperature"], **kw),
    "supcon": lambda u, v, labels, s, **kw: losses.supcon(u, v, labels, s["temperature"], **kw),
    "siglip": lambda u, v, labels, s, **kw: losses.siglip(u, v, s["scale"], s["bias"], **kw),
}


def _settings(name):
    values = {"scale": 7.0, "bias": -3.0} if name == "siglip" else SETTINGS
    return {key: torch.tensor(value, dtype=torch.float64, requires_grad=True)
            for key, value in values.items()}


def _value_and_setting_grads(name, x, y, weight, labels, **options):
    settings = _settings(name)
    value = LOSSES[name](x @ weight.T, y @ weight.T, labels, settings, **options)
    value.backward()
    return value.detach(), {key: t.grad for key, t in settings.items()}


def _worker(rank, port, results):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD)
    try:
        x, y, weight = _problem()
        rows = slice(rank * ROWS, (rank + 1) * ROWS)
        out = {}
        for name in LOSSES:
            for chunk_size in (None, 2):
                value, grads = _value_and_setting_grads(
                    name, x[rows], y[rows], weight, LABELS[rows], chunk_size=chunk_size,
                    distributed=True)
                out[name, chunk_size] = (
                    distributed.all_reduce_mean(value),
                    {key: distributed.all_reduce_mean(g) for key, g in grads.items()})
        results[rank] = out
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_process_results():
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(_worker, args=(free_port(), results), nprocs=WORLD, join=True)
    return dict(results)


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("name", list(LOSSES))
def test_setting_gradients_of_the_shares_average_to_the_global_gradient(
    two_process_results, name, chunk_size
):
    x, y, weight = _problem()
    value, grads = _value_and_setting_grads(name, x, y, weight, LABELS)
    for rank in range(WORLD):
        rank_value, rank_grads = two_process_results[rank][name, chunk_size]
        torch.testing.assert_close(rank_value, value, rtol=1e-12, atol=1e-12)
        for key, grad in grads.items():
            torch.testing.assert_close(rank_grads[key], grad, rtol=1e-10, atol=1e-12, msg=key)
