"""Where a pretraining step's time goes, and what evaluation and a sweep spend besides training.

    python -m benchmarks.train_step            # about 10 min on 2 idle cores
    python -m benchmarks.train_step --quick    # a fast check; prints only

Writes the ``train_step`` section of docs/benchmarks.md with ``--write-docs``.

1. **A step, by phase.** A real :func:`contrastkit.train.pretrain` run (SimCLR + 30 VRNS, the
   default objective) under ``torch.profiler``, for digits + the small CNN (the built-in data,
   batch 256) and for CIFAR-shaped random ``uint8`` images given as the user's own dataset +
   the CIFAR ResNet-18 (batch ``--resnet-batch``). The phases are the trainer's own profiler
   labels (``contrastkit/<phase>``, :mod:`contrastkit.train.step`; ``check`` is the test that
   the loss, parameters and buffers are finite) and PyTorch's DataLoader label (``data``). A
   step's wall time runs from one step's augmentation to the next's, so what no label covers
   (progress, the loop itself) is the ``other`` column. The first step warms up and is left
   out; medians over the rest. The profiler's own cost is in every column: the unprofiled
   images/s (from the run's second epoch, without a profiler) is shown beside the profiled one.
2. **Evaluation.** ``contrastkit evaluate``'s stages on the digits run (its defaults: a
   exact linear probe, kNN with k = 200, 5 000 augmented pairs), from their labels
   ``contrastkit/evaluate/<stage>``.
3. **A sweep.** ``contrastkit reproduce similarities/fig3`` (the quick tier, cells one after
   another) as a fresh process: the whole wall time, the import of contrastkit and torch, the
   cells' training (their ``train_seconds``) and the rest of the cells (data, model, evaluation),
   the rest being the runner's (results, claims, report and figures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.data import TensorDataset

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.evaluate import measure_run
from contrastkit.train import PretrainConfig, pretrain
from contrastkit.train.step import PHASES

COLUMNS = ("data", "augment", "forward", "loss", "backward", "optimizer", "monitor", "check")
DATA_LABEL = "enumerate(DataLoader)"
SWEEP = "similarities/fig3"


def labelled_seconds(events, prefix: str
                     ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each label's durations in seconds and start times in microseconds, in the order they
    ran: ``prefix<name>`` as ``name``, PyTorch's DataLoader label as ``data``."""
    found = defaultdict(list)
    for event in sorted(events, key=lambda event: event.time_range.start):
        if event.name.startswith(prefix):
            name = event.name.removeprefix(prefix)
        elif event.name.startswith(DATA_LABEL):
            name = "data"
        else:
            continue
        found[name].append((event.time_range.start, event.time_range.elapsed_us() / 1e6))
    return {name: [seconds for _, seconds in runs] for name, runs in found.items()}, {
        name: [start for start, _ in runs] for name, runs in found.items()}


def step_phases(config: PretrainConfig, dataset=None) -> dict[str, float]:
    """Median seconds per step of each phase of ``config``'s first epoch, its ``other`` and
    ``step`` (wall) time, and images/s profiled and (second epoch) unprofiled."""
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        pretrain(config, dataset=dataset)
    seconds, starts = labelled_seconds(profiler.events(), "contrastkit/")
    steps = len(seconds["augment"])
    if steps < 3:
        raise ValueError(f"the run took {steps} steps; at least 3 are needed")
    walls = [b - a for a, b in zip(starts["augment"][1:], starts["augment"][2:], strict=False)]
    row = {"step": statistics.median(walls) / 1e6}
    for name in COLUMNS:
        row[name] = statistics.median(seconds.get(name, [0.0] * steps)[1:steps])
    row["other"] = max(0.0, row["step"] - sum(row[name] for name in COLUMNS))
    row["images/s profiled"] = config.batch_size / row["step"]
    again = pretrain(_renamed(config, "unprofiled", epochs=2), dataset=dataset)
    row["images/s"] = again.history[-1]["images_per_s"]
    return row


def evaluation_stages(run_dir: Path) -> dict[str, float]:
    """Seconds of each stage of ``contrastkit evaluate`` on ``run_dir`` (its defaults)."""
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        measure_run(run_dir, device="cpu", progress=False)
    seconds, _ = labelled_seconds(profiler.events(), "contrastkit/evaluate/")
    return {name: sum(runs) for name, runs in seconds.items() if name != "data"}


def sweep_overhead() -> dict[str, float]:
    """Seconds of a quick-tier sweep run as a fresh process, split as the module says."""
    imports = _wall([sys.executable, "-c", "import torch, contrastkit.experiments"])
    with tempfile.TemporaryDirectory() as out:
        wall = _wall([sys.executable, "-m", "contrastkit", "reproduce", SWEEP, "--out", out,
                      "--no-progress"])
        results = [json.loads(path.read_text()) for path in Path(out).glob("cells/*/*/result.json")]
    cells = sum(result["seconds"] for result in results)
    training = sum(result["metrics"]["train_seconds"] for result in results)
    return {"wall": wall, "imports": imports, "cells": len(results), "training": training,
            "cells_besides_training": cells - training,
            "runner": max(0.0, wall - imports - cells)}


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def _renamed(config: PretrainConfig, name: str, **changes) -> PretrainConfig:
    settings = {**config.to_dict(), "name": f"{config.name}-{name}", **changes}
    return PretrainConfig(**{key: value for key, value in settings.items()
                             if not key.startswith("user_")})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small batches, a short evaluation, no sweep; prints only")
    parser.add_argument("--resnet-batch", type=int, default=128)
    parser.add_argument("--resnet-steps", type=int, default=4, help="profiled ResNet-18 steps")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.quick and args.write_docs:
        parser.error("--quick only prints; run without it to write the docs")
    assert set(COLUMNS) - {"data", "check"} <= set(PHASES)
    batch, resnet_batch = (64, 16) if args.quick else (256, args.resnet_batch)
    generator = torch.Generator().manual_seed(0)
    resnet_images = (args.resnet_steps + 1) * resnet_batch
    cifar_shaped = TensorDataset(
        torch.randint(0, 256, (resnet_images, 3, 32, 32), dtype=torch.uint8, generator=generator),
        torch.randint(0, 10, (resnet_images,), generator=generator))
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.train_step{' --quick' if args.quick else ''}`.",
             "", "### A pretraining step by phase (median ms per step; share of the step)", "",
             "| data + backbone, batch | " + " | ".join(COLUMNS) + " | other | step | "
             "images/s (profiled) | images/s |", "|---" * (len(COLUMNS) + 5) + "|"]
    with tempfile.TemporaryDirectory() as runs:
        settings = {"runs_dir": runs, "epochs": 1, "warmup_epochs": 0, "device": "cpu",
                    "progress": False}
        digits = PretrainConfig(name="digits", batch_size=batch, **settings)
        resnet = PretrainConfig(name="resnet18", backbone="resnet18", batch_size=resnet_batch,
                                projector_hidden=512, projector_out=128, **settings)
        for label, config, dataset in (
                (f"digits 8x8 + small CNN, {batch}", digits, None),
                (f"random 32x32 RGB + CIFAR ResNet-18, {resnet_batch}", resnet, cifar_shaped)):
            row = step_phases(config, dataset)
            print(label, row, flush=True)
            cells = [f"{1e3 * row[name]:.1f} ({row[name] / row['step']:.0%})"
                     for name in (*COLUMNS, "other")]
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {1e3 * row['step']:.1f} | "
                         f"{row['images/s profiled']:.0f} | {row['images/s']:.0f} |")
        stages = evaluation_stages(digits.run_dir)
    print("evaluate", stages, flush=True)
    total = sum(stages.values())
    lines += ["", "### `contrastkit evaluate` on the digits run (seconds)", "",
              "| " + " | ".join(stages) + " | total |", "|---" * (len(stages) + 1) + "|",
              "| " + " | ".join(f"{value:.2f} ({value / total:.0%})" for value in stages.values())
              + f" | {total:.2f} |"]
    if not args.quick:
        sweep = sweep_overhead()
        print("sweep", sweep, flush=True)
        lines += ["", f"### A sweep: `contrastkit reproduce {SWEEP}` (quick tier, "
                  f"{sweep['cells']} cells one after another; seconds)", "",
                  "| whole command | import contrastkit + torch | cells: training | "
                  "cells: data, model, evaluation | runner: results, claims, report |",
                  "|---|---|---|---|---|",
                  f"| {sweep['wall']:.1f} | " + " | ".join(
                      f"{sweep[key]:.1f} ({sweep[key] / sweep['wall']:.0%})"
                      for key in ("imports", "training", "cells_besides_training", "runner"))
                  + " |"]
    publish("train_step", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
