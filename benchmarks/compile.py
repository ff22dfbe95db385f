"""``compile=true`` against eager: pretraining throughput, and what the compilation costs.

    python -m benchmarks.compile            # about 10 min on 2 idle cores
    python -m benchmarks.compile --quick    # a fast check; prints only

Writes the ``compile`` section of docs/benchmarks.md with ``--write-docs``.

Each setup trains twice with the same config but ``compile``: digits + the small CNN (the
built-in data, batch 256) and CIFAR-shaped random ``uint8`` images given as the user's own
dataset + the CIFAR ResNet-18 (batch ``--resnet-batch``). Both are real
:func:`contrastkit.train.pretrain` runs (SimCLR + 30 VRNS, augmentation, optimizer and monitor
included), so the speed-up is that of a whole step, not of the encoder alone. The steady
throughput is the median ``images_per_s`` of the epochs after the first; the compilation's cost
is the compiled run's first epoch minus the eager run's, and the break-even the number of steps
after which the compiled run is ahead. The runs alternate (eager, compiled, eager, compiled), so
background load hits both alike; throughputs are medians over the rounds. Inductor caches what
it compiled on disk: the benchmark points it at a fresh folder, so the first round's compilation
is a first-ever one (cold) and the last round's reuses the cache (warm), as a user's second run
of the same model does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import torch
from torch.utils.data import TensorDataset

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.train import PretrainConfig, pretrain


def throughput(config: PretrainConfig, dataset) -> dict[str, float]:
    """The run's first-epoch seconds and its later epochs' median images/s."""
    history = pretrain(config, dataset=dataset, overwrite=True).history
    return {"first_epoch": history[0]["epoch_seconds"],
            "images_per_s": statistics.median(row["images_per_s"] for row in history[1:])}


def compare(config: PretrainConfig, dataset, rounds: int) -> dict[str, float]:
    """Eager against compiled, alternating for ``rounds`` rounds: the median throughputs, and
    the compilation's cost in the first round (inductor's cache cold) and in the last (warm)."""
    runs = {False: [], True: []}
    for _ in range(rounds):
        for compiled in (False, True):
            named = PretrainConfig(**{**config.to_dict(), "compile": compiled,
                                      "name": f"{config.name}-{compiled}"})
            runs[compiled].append(throughput(named, dataset))
            print(config.name, "compiled" if compiled else "eager", runs[compiled][-1],
                  flush=True)
    eager, fast = (statistics.median(run["images_per_s"] for run in runs[flag])
                   for flag in (False, True))
    cold, warm = (runs[True][index]["first_epoch"] - runs[False][index]["first_epoch"]
                  for index in (0, -1))
    seconds_saved_per_step = config.batch_size / eager - config.batch_size / fast
    return {"eager": eager, "compiled": fast, "speedup": fast / eager, "cold": cold,
            "warm": warm, "break_even_steps": (cold / seconds_saved_per_step
                                               if seconds_saved_per_step > 0 else None)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small batches, one round, the small CNN only; prints only")
    parser.add_argument("--resnet-batch", type=int, default=128)
    parser.add_argument("--resnet-steps", type=int, default=6, help="ResNet-18 steps per epoch")
    parser.add_argument("--epochs", type=int, default=4,
                        help="epochs per run (the first holds the compilation)")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.quick and args.write_docs:
        parser.error("--quick only prints; run without it to write the docs")
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first holds the compilation")
    batch, rounds = (64, 1) if args.quick else (256, 2)
    generator = torch.Generator().manual_seed(0)
    resnet_images = args.resnet_steps * args.resnet_batch
    cifar_shaped = TensorDataset(
        torch.randint(0, 256, (resnet_images, 3, 32, 32), dtype=torch.uint8, generator=generator),
        torch.randint(0, 10, (resnet_images,), generator=generator))
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.compile {' '.join(argv or sys.argv[1:])}` "
             f"({args.epochs} epochs per run, {rounds} alternating rounds; torch's default "
             f"threads; inductor, the default mode).", "",
             "| data + backbone, batch | eager images/s | compiled images/s | speed-up | "
             "compilation, s (cache cold / warm) | break-even, steps (cold) |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as runs:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(runs, "inductor-cache")
        settings = {"runs_dir": runs, "epochs": args.epochs, "warmup_epochs": 0,
                    "device": "cpu", "progress": False}
        setups = [(f"digits 8x8 + small CNN, {batch}",
                   PretrainConfig(name="digits", batch_size=batch, **settings), None)]
        if not args.quick:
            setups.append((f"random 32x32 RGB + CIFAR ResNet-18, {args.resnet_batch}",
                           PretrainConfig(name="resnet18", backbone="resnet18",
                                          batch_size=args.resnet_batch, **settings),
                           cifar_shaped))
        for label, config, dataset in setups:
            row = compare(config, dataset, rounds)
            print(label, row, flush=True)
            even = ("never" if row["break_even_steps"] is None
                    else f"{row['break_even_steps']:.0f}")
            lines.append(f"| {label} | {row['eager']:.0f} | {row['compiled']:.0f} | "
                         f"{row['speedup']:.2f}x | {row['cold']:.1f} / {row['warm']:.1f} | "
                         f"{even} |")
    publish("compile", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
