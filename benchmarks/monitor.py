"""The similarity monitor's cost per step against a SimCLR training step (B = 256, d = 128, CPU).

    python -m benchmarks.monitor                  # about a minute on 2 busy cores
    python -m benchmarks.monitor --write-docs     # also rewrite the ``monitor`` section

The monitor (``SimilarityMonitor.update``, fed two fixed ``256 x 128`` float32 views) is timed
against two SimCLR steps (temperature 0.2, batch 256):

1. the loss alone: forward and backward of ``losses.SimCLR`` on fixed ``256 x 128``
   embeddings (the cheapest step a SimCLR run can take);
2. a full training step of the library's small CNN (3 conv blocks and the projector to
   d = 128) on two views of 256 random 28x28 grayscale images: the encoder's forward on both
   views, the loss, backward, and an SGD step (no augmentation).

The monitor's time per step is the mean over a window of ``log_every`` updates, the window's
:meth:`~contrastkit.monitor.SimilarityMonitor.compute` included (every step with
``log_every = 1``, once in 50 steps with ``log_every = 50``). The cases run in interleaved
rounds, so that background load hits them alike; the ratio is taken within each round and its
median reported. Everything runs on one thread and is timed in process CPU time, which the
other processes of a shared machine do not inflate.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit import losses
from contrastkit.models import build_encoder
from contrastkit.monitor import SimilarityMonitor

BATCH, DIM, IMAGE = 256, 128, 28
LOG_EVERY = (1, 50)
TARGET = 0.05


def _views(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    u = torch.randn(BATCH, DIM, generator=generator)
    return u, u + 0.5 * torch.randn(BATCH, DIM, generator=generator)


def loss_step(u: torch.Tensor, v: torch.Tensor):
    """Step 1: SimCLR's forward and backward on fixed embeddings."""
    objective = losses.SimCLR(temperature=0.2)

    def step() -> None:
        a, b = u.clone().requires_grad_(), v.clone().requires_grad_()
        objective(a, b).backward()

    return step


def cnn_step(generator: torch.Generator):
    """Step 2: a full SGD step of the small CNN with SimCLR on two views of 256 images."""
    encoder = build_encoder("small_cnn", 1, (0.5,), (0.25,))
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01, momentum=0.9)
    objective = losses.SimCLR(temperature=0.2)
    views = torch.rand(2, BATCH, 1, IMAGE, IMAGE, generator=generator)

    def step() -> None:
        optimizer.zero_grad()
        objective(encoder(views[0]), encoder(views[1])).backward()
        optimizer.step()

    return step


def monitor_window(u: torch.Tensor, v: torch.Tensor, log_every: int):
    """One window of ``log_every`` monitor updates, the last of which computes its result."""
    monitor = SimilarityMonitor(n=50_000, log_every=log_every)

    def window() -> None:
        for _ in range(log_every):
            monitor.update(u, v)

    return window


def _seconds(fn, calls: int = 1) -> float:
    """Process CPU seconds per call of ``fn`` over ``calls`` calls."""
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls


def measure(rounds: int) -> dict[str, list[float]]:
    """Seconds per step of each case in each of ``rounds`` interleaved rounds."""
    generator = torch.Generator().manual_seed(0)
    u, v = _views(generator)
    cases = {"loss": (loss_step(u, v), 20, 1), "cnn": (cnn_step(generator), 1, 1)}
    for log_every in LOG_EVERY:
        calls = max(1, 50 // log_every)
        cases[f"monitor {log_every}"] = (monitor_window(u, v, log_every), calls, log_every)
    times: dict[str, list[float]] = {name: [] for name in cases}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random views look like nothing the monitor warns of
        for fn, _, _ in cases.values():
            fn()  # warm-up
        for _ in range(rounds):
            for name, (fn, calls, steps) in cases.items():
                times[name].append(_seconds(fn, calls) / steps)
    return times


def _ratio(times: dict[str, list[float]], monitor: str, step: str) -> float:
    return statistics.median(m / s for m, s in zip(times[monitor], times[step], strict=True))


def report(times: dict[str, list[float]], rounds: int) -> str:
    """The markdown section: times per step and the per-round median ratios."""
    ms = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.monitor` ({rounds} interleaved rounds after a "
             "warm-up; B = 256, d = 128, float32, CPU, one thread, process CPU time).", "",
             f"| case | ms per step | monitor, log_every = {LOG_EVERY[0]} | "
             f"monitor, log_every = {LOG_EVERY[1]} |", "|---|---|---|---|"]
    for name, label in (("loss", "SimCLR loss forward + backward on fixed embeddings"),
                        ("cnn", f"small-CNN SimCLR training step, 2 x 256 images "
                                f"{IMAGE}x{IMAGE}")):
        ratios = [_ratio(times, f"monitor {k}", name) for k in LOG_EVERY]
        lines.append(f"| {label} | {ms[name]:.1f} | "
                     + " | ".join(f"{100 * r:.1f} % {_verdict(r)}" for r in ratios) + " |")
    lines.append(f"| the monitor's `update` itself | - | {ms['monitor 1']:.2f} ms | "
                 f"{ms['monitor 50']:.2f} ms |")
    lines += ["", "Ratios: the monitor's time per step over the step's, median of the "
              f"per-round ratios; target under {100 * TARGET:.0f} %. The monitor's time "
              "includes, once per window, `compute()` (an eigendecomposition of the d x d "
              "second moment for the effective rank)."]
    return "\n".join(lines)


def _verdict(ratio: float) -> str:
    return "(met)" if ratio < TARGET else "(not met)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    times = measure(args.rounds)
    publish("monitor", report(times, args.rounds), args.write_docs)


if __name__ == "__main__":
    main()
