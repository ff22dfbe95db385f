"""Where a loss's fixed cost goes at small batches: operator counts and time by kind, profiled.

    python -m benchmarks.loss_profile            # about a minute

Writes the ``loss_profile`` section of docs/benchmarks.md with ``--write-docs``.

For each loss and B (d = 128, float32, one CPU thread), one forward + backward of the module is
timed (median of ``--repeats`` calls after 20 warm-up calls), then profiled over the same number
of calls with ``torch.profiler``: the ATen operators per call (every dispatch, views and casts
included), the self time of the matrix products, of the exponentials (softplus and log_softmax
included), and of the Python bodies of contrastkit's autograd Functions (their forward and
backward), each as a share of the profiled time. The profiled time is longer than the unprofiled
one by the profiler's cost per operator, which is itself a measure of how many operators there
are.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit import losses

DIM = 128
SIZES = (64, 256, 1024)
LOSSES = {
    "simclr": lambda: losses.SimCLR(temperature=0.2),
    "info_nce": lambda: losses.InfoNCE(temperature=0.2),
    "siglip": lambda: losses.SigLIP(),
    "vrns": lambda: losses.VRNS(n=50_000),
}
MATMULS = {"aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm", "aten::baddbmm"}
# the operators that exponentiate the matrix (log_softmax: the small path's cross-entropy)
EXPONENTIALS = {"aten::exp", "aten::exp_", "aten::softplus", "aten::log1p", "aten::logsumexp",
                "aten::_log_softmax"}


def profile_case(make, batch: int, repeats: int) -> dict[str, float]:
    """Microseconds per call: wall (unprofiled) and profiled, and the shares described above."""
    generator = torch.Generator().manual_seed(batch)
    u = torch.randn(batch, DIM, generator=generator, requires_grad=True)
    v = torch.randn(batch, DIM, generator=generator, requires_grad=True)
    loss = make()
    for _ in range(20):
        loss(u, v).backward()
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        loss(u, v).backward()
        walls.append(time.perf_counter() - start)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for _ in range(repeats):
            loss(u, v).backward()
    events = profiler.key_averages()

    def self_us(keep) -> float:
        return sum(event.self_cpu_time_total for event in events if keep(event.key)) / repeats

    return {"wall": statistics.median(walls) * 1e6,
            "profiled": self_us(lambda key: True),
            "operators": sum(event.count for event in events
                             if event.key.startswith("aten::")) / repeats,
            "matmul": self_us(lambda key: key in MATMULS),
            "exp": self_us(lambda key: key in EXPONENTIALS),
            "python": self_us(lambda key: key.startswith("_"))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.loss_profile` (d = {DIM}, float32, one thread, "
             f"{args.repeats} calls).", "",
             "| loss | B | fwd + bwd, us | profiled, us | ATen operators per call | "
             "matrix products | exp / softplus | Python autograd bodies |",
             "|---|---|---|---|---|---|---|---|"]
    for name, make in LOSSES.items():
        for batch in SIZES:
            row = profile_case(make, batch, args.repeats)
            print(name, batch, row, flush=True)
            share = {key: f"{row[key]:.0f} ({row[key] / row['profiled']:.0%})"
                     for key in ("matmul", "exp", "python")}
            lines.append(f"| {name} | {batch} | {row['wall']:.0f} | {row['profiled']:.0f} | "
                         f"{row['operators']:.0f} | {share['matmul']} | {share['exp']} | "
                         f"{share['python']} |")
    torch.set_num_threads(threads)
    publish("loss_profile", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
