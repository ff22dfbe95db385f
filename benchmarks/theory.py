"""Benchmark of the theory layer and the simulator; rewrites the ``theory`` section of
docs/benchmarks.md.

Run: ``python -m benchmarks.theory`` (about a minute; ``--quick`` for fewer repeats).

- ``sigmoid_optimum`` for n up to 10^6 in every regime (target: under 10 ms);
- one simulator step (full batch, n = 512, d = 128, SimCLR) against the matrix products it needs
  (target: within 1.5x). The step time is the difference of two ``optimize_embeddings`` runs of
  different lengths, so set-up, initialization and the recorded statistics cancel out. The
  simulator is timed on one thread in process CPU time, which other jobs on a shared machine
  disturb far less than wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks._report import add_write_docs_flag, machine_description, median_seconds, publish
from contrastkit import losses, theory
from contrastkit.simulate import optimize_embeddings

SIGMOID_CASES = [  # (n, t, b): regimes ETF, intermediate (root finding), antipodal, t != b
    (10, 10.0, 10.0), (1000, 10.0, 10.0), (10**5, 10.0, 10.0), (10**6, 10.0, 10.0),
    (10**6, 12.0, 12.0), (10**6, 3.0, 3.0), (10**6, 5.0, 1.0), (10**6, 20.0, -5.0),
]


def bench_sigmoid(repeats: int) -> list[tuple[int, float, float, str, float]]:
    rows = []
    for n, t, b in SIGMOID_CASES:
        seconds = median_seconds(lambda n=n, t=t, b=b: theory.sigmoid_optimum(n, t, b),
                                 repeats=repeats)
        rows.append((n, t, b, theory.sigmoid_optimum(n, t, b).regime, seconds))
    return rows


def bench_simulator_step(dtype: torch.dtype, repeats: int, n: int = 512, d: int = 128):
    """Medians over interleaved repeats of: the simulator step, the loss's forward + backward
    alone, the nine matrix products (seconds each), and the per-repeat ratios step / products
    (the step and its floor measured back to back, so that slow phases of a shared machine
    hit both); returns the three times, the median ratio and the ratios' range."""
    loss = losses.SimCLR(temperature=0.2)
    generator = torch.Generator().manual_seed(0)
    u, v = (torch.randn(n, d, generator=generator, dtype=dtype) for _ in range(2))
    g = torch.randn(n, n, generator=generator, dtype=dtype)
    short, long = 3, 33

    def run(steps: int) -> float:
        start = time.process_time()
        optimize_embeddings(loss, n, d, steps=steps, lr=0.01, dtype=dtype, record_every=steps)
        return time.process_time() - start

    def loss_pass():
        a, b = u.clone().requires_grad_(), v.clone().requires_grad_()
        loss(a, b).backward()

    def products():
        # forward: u v^T, u u^T, v v^T; backward: two (n x n)(n x d) products per similarity
        for a, b in ((u, v), (u, u), (v, v)):
            a @ b.T
            g @ b
            g.T @ a

    run(short)  # warm-up: first-call set-up (allocator, optimizer kernels) is not a step
    samples = []
    for _ in range(repeats):
        step = (run(long) - run(short)) / (long - short)
        samples.append((step, _cpu_seconds(loss_pass, repeats=5), _cpu_seconds(products, 10)))
    step, loss_alone, floor = (statistics.median(column) for column in zip(*samples, strict=True))
    ratios = [step / floor for step, _, floor in samples]
    return step, loss_alone, floor, statistics.median(ratios), (min(ratios), max(ratios))


def _cpu_seconds(fn, repeats: int) -> float:
    """Median process CPU time of ``fn()`` over ``repeats`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 9
    sigmoid = bench_sigmoid(repeats=20 if args.quick else 100)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    steps = {name: bench_simulator_step(dtype, repeats)
             for name, dtype in (("float32", torch.float32), ("float64", torch.float64))}
    torch.set_num_threads(threads)

    lines = [
        f"Machine: {machine_description()}. Command: `python -m benchmarks.theory`"
        + (" --quick" if args.quick else "") + ".",
        "",
        "**`theory.sigmoid_optimum`** (target: under 10 ms for any n up to 10^6; median of "
        "repeated calls):",
        "",
        "| n | t | b | regime | time |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {n:,} | {t:g} | {b:g} | {regime} | {s * 1e6:.0f} µs |"
              for n, t, b, regime, s in sigmoid]
    worst = max(s for *_, s in sigmoid)
    lines += [
        "",
        f"Slowest case: {worst * 1e3:.3f} ms ({'meets' if worst < 0.01 else 'misses'} the "
        "10 ms target).",
        "",
        "**Simulator step** (`optimize_embeddings`, full batch, n = 512, d = 128, SimCLR, Adam; "
        "one thread, process CPU time; "
        "target: within 1.5x of the matrix products a step needs: the three similarity "
        "matrices and their two backward products each, nine (512 x 128 x 512) matmuls):",
        "",
        "| dtype | simulator step | loss forward + backward alone | matrix products "
        "| step / products (median of per-repeat ratios) | range over repeats |",
        "|---|---|---|---|---|---|",
    ]
    for name, (step, loss_pass, floor, ratio, (low, high)) in steps.items():
        lines.append(f"| {name} | {step * 1e3:.2f} ms | {loss_pass * 1e3:.2f} ms | "
                     f"{floor * 1e3:.2f} ms | {ratio:.2f}x | {low:.2f}x - {high:.2f}x |")
    lines += ["", "The step is the loss's forward and backward plus Adam and the projection back "
              "to the sphere; the middle column separates the library loss's own cost from the "
              "simulator's. The nine products are the general accounting; SimCLR's matrix "
              "`[u; v][u; v]^T` is symmetric, and the library's kernel needs seven of them "
              "(its top half and bottom-right quarter forward, one product per entry backward; see "
              "`losses/kernels/symmetric.py`). The rest of the step is the exp over those logits, "
              "elementwise passes, normalization, the fused Adam update and the projection. All "
              "three columns are medians of the same interleaved repeats."]
    markdown = "\n".join(lines)
    publish("theory", markdown, args.write_docs)


if __name__ == "__main__":
    main()
