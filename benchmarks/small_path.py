"""Small-path benchmark: where plain autograd beats the hand-written kernels.

The losses compute a small similarity matrix in plain autograd and a larger one with their
kernels (``losses/kernels/common.py``: ``PLAIN_AUTOGRAD_ENTRIES`` entries, times
``softplus_sum.PLAIN_FACTOR`` for SigLIP). This times both paths of each loss on the same
inputs, forward + backward, at batch sizes around those thresholds: the small path by raising
``PLAIN_AUTOGRAD_ENTRIES`` above the matrix, the kernels by setting it to 0. The two run in
interleaved rounds (each sample at least ``SAMPLE_SECONDS``); the median per-round ratio
small / kernel is reported, below 1 where the small path is faster.

Run ``python -m benchmarks.small_path`` (``--write-docs`` writes the ``small_path`` section of
docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics

import torch

from benchmarks._report import (
    SAMPLE_SECONDS,
    add_write_docs_flag,
    backward_step,
    interleaved_times,
    machine_description,
    publish,
)
from contrastkit import losses
from contrastkit.losses.kernels import common
from contrastkit.losses.kernels.softplus_sum import PLAIN_FACTOR

DIM = 128
SIZES = (64, 128, 256, 384, 512, 768)
# the losses, and how many rows their matrix has per pair (SimCLR, DCL and SupCon stack both
# views); SupCon's labels: 10 classes, row i of both views in class i mod 10
LOSSES = {"info_nce": 1, "simclr": 2, "dcl": 2, "dhel": 1, "supcon": 2, "siglip": 1}
SUPCON_CLASSES = 10


def _loss(name: str, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    if name == "supcon":
        return losses.supcon(u, v, torch.arange(len(u)) % SUPCON_CLASSES)
    return getattr(losses, name)(u, v)


def _with_entries(entries: int, loss: str):
    """``loss`` (defaults) with ``PLAIN_AUTOGRAD_ENTRIES`` set to ``entries`` during the call."""

    def call(u, v):
        saved = common.PLAIN_AUTOGRAD_ENTRIES
        common.PLAIN_AUTOGRAD_ENTRIES = entries
        try:
            return _loss(loss, u, v)
        finally:
            common.PLAIN_AUTOGRAD_ENTRIES = saved

    return call


def compare(loss: str, batch: int, repeats: int) -> dict[str, float]:
    """Median seconds of both paths of ``loss`` at ``batch`` and their median per-round ratio."""
    rows = LOSSES[loss] * batch
    steps = {"small": backward_step(_with_entries(rows * rows, loss), batch, DIM),
             "kernel": backward_step(_with_entries(0, loss), batch, DIM)}
    for step in steps.values():
        step()
    times = interleaved_times(steps, repeats, SAMPLE_SECONDS)
    return {"small": statistics.median(times["small"]),
            "kernel": statistics.median(times["kernel"]),
            "ratio": statistics.median(s / k for s, k in zip(times["small"], times["kernel"],
                                                               strict=True))}


def _default_reach(loss: str, batch: int) -> str:
    """Which path the loss takes at ``batch`` on the CPU with the library's thresholds."""
    rows = LOSSES[loss] * batch
    factor = PLAIN_FACTOR if loss == "siglip" else 1
    cpu = torch.device("cpu")
    return "small" if common.plain_autograd(rows, rows, None, cpu, factor) else "kernel"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved timing rounds")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    header = " | ".join(f"B = {batch}" for batch in args.sizes)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.small_path` (d = {DIM}, float32, CPU, torch's "
             f"default threads; {args.repeats} interleaved rounds, each sample at least "
             f"{SAMPLE_SECONDS * 1e3:g} ms). Each cell: small path / kernels, median per-round "
             "ratio of forward + backward times (below 1: the small path is faster), and the "
             "path the library takes there in brackets.", "",
             f"| loss | {header} |", "|---|" + "---|" * len(args.sizes)]
    for loss in LOSSES:
        cells = []
        for batch in args.sizes:
            result = compare(loss, batch, args.repeats)
            print(f"{loss:9s} B={batch:4d} small {result['small'] * 1e3:.3f} ms, kernel "
                  f"{result['kernel'] * 1e3:.3f} ms, ratio {result['ratio']:.2f}", flush=True)
            cells.append(f"{result['ratio']:.2f} ({_default_reach(loss, batch)})")
        lines.append(f"| {loss} | " + " | ".join(cells) + " |")
    publish("small_path", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
