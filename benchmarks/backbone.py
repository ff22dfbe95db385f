"""A backbone for 28x28 images on a CPU: ``small_cnn`` against ``small_cnn_strided`` on MNIST-5k,
images per second and the linear accuracy they converge to.

    python -m benchmarks.backbone               # about 35 min on 2 cores
    python -m benchmarks.backbone --epochs 10   # a quicker look at the accuracy

1. **Speed.** ``contrastkit pretrain`` on MNIST-5k (SimCLR, t = 0.2, batch 128) for
   ``--speed-epochs`` epochs with each backbone, in this process, one thread, the backbones
   alternating over ``--rounds`` rounds; images per second of the epochs after the first.
2. **Accuracy.** Each backbone trained for ``--epochs`` epochs (5 % warm-up, cosine), both at
   once in two processes of one thread each (the cores split as a sweep splits them), then the
   exact linear probe (``contrastkit.evaluate.probe_run``) and kNN on its final checkpoint and
   on the half-way one (the convergence check of the reproductions: within a point).

Writes the ``backbone`` section of docs/benchmarks.md with ``--write-docs``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.experiments.convergence import half_way

BACKBONES = ("small_cnn", "small_cnn_strided")
SETTINGS = {"dataset": "mnist5k", "batch_size": 128, "loss": "simclr", "temperature": 0.2,
            "vrns": 0.0, "warmup_share": 0.05, "device": "cpu", "progress": False}


def speed(rounds: int, epochs: int) -> dict[str, float]:
    """Median images per second of each backbone (epochs after the first)."""
    import torch

    from contrastkit.train import PretrainConfig, pretrain

    torch.set_num_threads(1)
    rates = {name: [] for name in BACKBONES}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(rounds):
            for name in BACKBONES if round_ % 2 == 0 else BACKBONES[::-1]:
                config = PretrainConfig().with_overrides(
                    {**SETTINGS, "backbone": name, "epochs": epochs, "runs_dir": folder,
                     "name": f"{name}-{round_}"})
                history = pretrain(config).history
                rates[name] += [epoch["images_per_s"] for epoch in history[1:]]
    return {name: statistics.median(values) for name, values in rates.items()}


TRAIN = """
import json, sys
from contrastkit.evaluate import probe_run
from contrastkit.experiments.convergence import half_way
from contrastkit.train import PretrainConfig, pretrain
settings = json.loads(sys.argv[1])
config = PretrainConfig().with_overrides(settings)
half = {}
def probe(completed, metrics):
    if completed == half_way(config.epochs):
        half.update(probe_run(config.run_dir, device="cpu"))
pretrain(config, callbacks=[probe])
final = probe_run(config.run_dir, device="cpu")
print(json.dumps({"half": half, "final": final}))
"""


def accuracy(epochs: int, folder: Path) -> dict[str, dict]:
    """Each backbone's probes at half-way and at the end, trained in parallel processes."""
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OMP_WAIT_POLICY": "PASSIVE"}
    processes = {}
    for name in BACKBONES:
        settings = {**SETTINGS, "backbone": name, "epochs": epochs, "runs_dir": str(folder),
                    "name": name}
        processes[name] = subprocess.Popen([sys.executable, "-c", TRAIN, json.dumps(settings)],
                                           stdout=subprocess.PIPE, env=environ, text=True)
    found = {}
    for name, process in processes.items():
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"training {name} failed")
        found[name] = json.loads(out.strip().splitlines()[-1])
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--speed-epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    machine = machine_description()
    rates = speed(args.rounds, args.speed_epochs)
    with tempfile.TemporaryDirectory() as folder:
        found = accuracy(args.epochs, Path(folder))
    lines = [
        f"Machine: {machine}. Command: `python -m benchmarks.backbone --epochs {args.epochs} "
        f"--speed-epochs {args.speed_epochs} --rounds {args.rounds}` "
        f"(MNIST-5k, SimCLR t = 0.2, batch 128, 5 % warm-up; speed over "
        f"{args.speed_epochs - 1} epochs x {args.rounds} rounds, one thread).", "",
        f"| backbone | images/s (1 thread) | linear top-1 at epoch {half_way(args.epochs)} (%) "
        f"| linear top-1 at epoch {args.epochs} (%) | kNN top-1 at epoch {args.epochs} "
        "(%) |", "|---|---|---|---|---|"]
    for name in BACKBONES:
        half, final = found[name]["half"], found[name]["final"]
        lines.append(f"| `{name}` | {rates[name]:.0f} | {half['linear_top1']:.1f} | "
                     f"{final['linear_top1']:.1f} | {final['knn_top1']:.1f} |")
    ratio = rates["small_cnn_strided"] / rates["small_cnn"]
    gain = (found["small_cnn_strided"]["final"]["linear_top1"]
            - found["small_cnn"]["final"]["linear_top1"])
    lines += ["", f"`small_cnn_strided`: **{ratio:.1f}x** the images per second of "
                  f"`small_cnn`, linear top-1 {gain:+.1f} points at the end."]
    publish("backbone", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
