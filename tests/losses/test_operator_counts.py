"""The fixed cost per call at small batches, pinned: the ATen operators one forward + backward
dispatches (counted by torch.profiler, as ``benchmarks.loss_profile`` counts them; deterministic
for a given torch). At B = 64 most of a loss's time is these dispatches, so a change that adds a
per-row Python loop (64 or more operators) or undoes the single-block paths fails here. The
bounds are about 15% above the counts measured when they were set (torch 2.14: SimCLR 262,
InfoNCE 236, SigLIP 154, VRNS 161 at d = 128; 389, 357, 255, 234 before issue 15)."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from contrastkit import losses

BOUNDS = {
    "simclr": (lambda: losses.SimCLR(temperature=0.2), 300),
    "info_nce": (lambda: losses.InfoNCE(temperature=0.2), 270),
    "siglip": (lambda: losses.SigLIP(), 180),
    "vrns": (lambda: losses.VRNS(n=50_000), 185),
}


def operators_per_call(loss, u, v, calls: int = 2) -> float:
    loss(u, v).backward()  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(calls):
            loss(u, v).backward()
    events = profiler.key_averages()
    return sum(event.count for event in events if event.key.startswith("aten::")) / calls


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_operators_per_call_at_batch_64_stay_below_the_bound(name):
    make, bound = BOUNDS[name]
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(64, 128, generator=generator, requires_grad=True)
    v = torch.randn(64, 128, generator=generator, requires_grad=True)
    count = operators_per_call(make(), u, v)
    assert count <= bound, f"{name}: {count:.0f} ATen operators per call, bound {bound}"
