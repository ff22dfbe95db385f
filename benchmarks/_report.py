"""Shared helpers of the benchmarks: machine description and the sections of docs/benchmarks.md.

Each benchmark prints its results as markdown. Only when asked (``--write-docs``, see
:func:`add_write_docs_flag` and :func:`publish`) does it also rewrite its own section of
``docs/benchmarks.md``, delimited by ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def machine_description() -> str:
    """One markdown line naming the CPU, core count, Python and torch versions."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = f", load average {os.getloadavg()[0]:.1f} at start" if hasattr(os, "getloadavg") else ""
    return (
        f"{cpu}, {os.cpu_count()} cores{load}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.release()}"
    )


def median_seconds(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def backward_step(fn: Callable, batch: int, dim: int) -> Callable[[], object]:
    """A closure running ``fn(u, v)`` and its backward on seeded ``(batch, dim)`` inputs (the
    generator seeded with ``batch``); ``fn`` may return ``None`` (a floor with no graph)."""
    import torch

    generator = torch.Generator().manual_seed(batch)
    u = torch.randn(batch, dim, generator=generator).requires_grad_()
    v = torch.randn(batch, dim, generator=generator).requires_grad_()

    def step():
        value = fn(u, v)
        if value is not None:
            value.backward()
            u.grad = v.grad = None
        return value

    return step


# each timed sample of a step lasts at least this long (a fast step repeats within the sample)
SAMPLE_SECONDS = 0.02


def interleaved_times(steps: dict[str, Callable[[], object]], repeats: int,
                      min_seconds: float = 0.0) -> dict[str, list[float]]:
    """Seconds per call of each step in ``repeats`` rounds, every step once per round, the order
    rotated from round to round, so that background load hits them alike.

    A step faster than ``min_seconds`` runs that long in each round (its call count fixed from
    one timed call beforehand) and its mean per call is recorded: a single sub-millisecond call
    is at the mercy of the scheduler's jitter."""
    order = list(steps)
    calls = {name: _calls_filling(steps[name], min_seconds) for name in order}
    times = {name: [] for name in order}
    for round_ in range(repeats):
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            step, count = steps[name], calls[name]
            start = time.perf_counter()
            for _ in range(count):
                step()
            times[name].append((time.perf_counter() - start) / count)
    return times


def _calls_filling(step: Callable[[], object], seconds: float) -> int:
    """How many calls of ``step`` take about ``seconds`` (at least one), from one timed call."""
    if seconds <= 0:
        return 1
    start = time.perf_counter()
    step()
    return max(1, math.ceil(seconds / max(time.perf_counter() - start, 1e-9)))


def add_write_docs_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--write-docs`` option every benchmark shares."""
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help=f"also rewrite this benchmark's section of {REPORT.parent.name}/{REPORT.name} "
        "(default: print only)",
    )


def publish(name: str, markdown: str, write_docs: bool, report: Path = REPORT) -> None:
    """Print ``markdown``; with ``write_docs``, also make it section ``name`` of ``report``."""
    print(markdown)
    if write_docs:
        write_section(name, markdown, report)
        print(f"\nwrote section {name!r} of {report}")


def write_section(name: str, markdown: str, report: Path = REPORT) -> None:
    """Replace section ``name`` of the report with ``markdown`` (appending it if absent)."""
    begin, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = report.read_text() if report.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text)
