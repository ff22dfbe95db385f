"""``pretrain`` against a bare, tuned training loop of the same parts, on a GPU.

    python -m benchmarks.gpu_train --out gpu-figures          # on a CUDA machine, ~3 min
    python -m benchmarks.gpu_train --device cpu --quick --out /tmp/x   # the code path, on a CPU

CIFAR-shaped ``uint8`` images (random, 3 x 32 x 32, held in memory as the user's own dataset)
through a CIFAR ResNet-18 at batch 512 and a ResNet-50 at batch 256, SimCLR (t = 0.2) + 30 VRNS,
SGD with momentum. ``pretrain`` is timed from its own ``images_per_s`` of every epoch but the
first (which pays cuDNN's algorithm search and the allocator's growth); the bare loop runs the
same encoder, augmentation, loss, optimizer and precision with ``channels_last``, no monitor, no
checks and no host synchronisation but one at the end, over the same number of images after
the same warm-up. The two alternate (bare, pretrain, bare, pretrain) so that a clock change
or another process hits both. The target (issue 35): pretrain at least 0.9x the bare loop.

Prints a markdown table; ``--out`` also writes it (``gpu_train.md``) with the raw numbers
(``gpu_train.json``) to a folder, and ``--write-docs`` to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks._report import add_write_docs_flag, machine_description, publish

#: (backbone, batch size) of the full benchmark and of ``--quick``.
SETUPS = (("resnet18", 512), ("resnet50", 256))
QUICK_SETUPS = (("small_cnn", 16),)


def synthetic_cifar(count: int, seed: int = 0):
    """``count`` random CIFAR-shaped uint8 images with ten labels, as an in-memory dataset."""
    from contrastkit.data.images import DatasetInfo, ImageTensorDataset

    generator = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (count, 3, 32, 32), generator=generator, dtype=torch.uint8)
    labels = torch.randint(0, 10, (count,), generator=generator)
    info = DatasetInfo("synthetic_cifar", channels=3, image_size=32, num_classes=10,
                       mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    return ImageTensorDataset(images, labels, info)


def config_for(backbone: str, batch_size: int, epochs: int, device: str, precision: str,
               runs_dir: str):
    from contrastkit.train import PretrainConfig

    return PretrainConfig(runs_dir=runs_dir, name=f"{backbone}-{batch_size}", backbone=backbone,
                          batch_size=batch_size, epochs=epochs, warmup_epochs=0, vrns=30.0,
                          device=device, precision=precision, progress=False,
                          log_every=10**6)


def pretrain_images_per_s(config, dataset) -> float:
    """``pretrain``'s images/s over its epochs after the first."""
    from contrastkit.train import pretrain

    history = pretrain(config, dataset=dataset, overwrite=True).history
    timed = history[1:] or history
    images = sum(row["images_per_s"] * row["epoch_seconds"] for row in timed)
    return images / sum(row["epoch_seconds"] for row in timed)


def bare_images_per_s(config, dataset, warmup_steps: int, steps: int) -> float:
    """A tuned loop of pretrain's own parts: images/s over ``steps`` after ``warmup_steps``."""
    from contrastkit import losses
    from contrastkit.train.inputs import build_inputs
    from contrastkit.train.layout import encoder_in_layout, images_in_layout
    from contrastkit.train.precision import resolve_precision
    from contrastkit.train.runtime import start_runtime

    device = start_runtime(config.device).device
    precision = resolve_precision(config.precision, device)
    inputs = build_inputs(config, device, dataset=dataset)
    encoder = encoder_in_layout(inputs.encoder, device).train()
    augment = inputs.augment
    criterion = (losses.SimCLR(temperature=config.temperature)
                 + config.vrns * losses.VRNS(n=len(dataset))).to(device)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=config.lr, momentum=config.momentum,
                                weight_decay=config.weight_decay)
    scaler = precision.scaler()
    images = dataset.images
    generator = torch.Generator().manual_seed(0)
    batch = config.batch_size

    def step(index: int) -> None:
        start = (index * batch) % (len(images) - batch + 1)
        x = images[start:start + batch].to(device, non_blocking=True).float().div_(255)
        views = [images_in_layout(augment(x, generator)) for _ in range(2)]
        with precision.autocast():
            loss = criterion(encoder(views[0]), encoder(views[1]))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for index in range(warmup_steps):
        step(index)
    _synchronize(device)
    start = time.perf_counter()
    for index in range(steps):
        step(warmup_steps + index)
    _synchronize(device)
    return steps * batch / (time.perf_counter() - start)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(setups, images: int, epochs: int, repeats: int, device: str, precision: str) -> list:
    dataset = synthetic_cifar(images)
    rows = []
    for backbone, batch_size in setups:
        steps_per_epoch = images // batch_size
        bare, ours = [], []
        with tempfile.TemporaryDirectory() as runs:
            config = config_for(backbone, batch_size, epochs, device, precision, runs)
            for _ in range(repeats):
                bare.append(bare_images_per_s(config, dataset, steps_per_epoch,
                                              steps_per_epoch * (epochs - 1)))
                ours.append(pretrain_images_per_s(config, dataset))
        row = {"backbone": backbone, "batch_size": batch_size, "precision": precision,
               "bare_images_per_s": bare, "pretrain_images_per_s": ours,
               "ratio": statistics.median(ours) / statistics.median(bare)}
        print(f"{backbone} batch {batch_size} {precision}: pretrain "
              f"{statistics.median(ours):.0f} images/s, bare loop {statistics.median(bare):.0f}"
              f" ({row['ratio']:.2f}x)", flush=True)
        rows.append(row)
    return rows


def table(rows: list[dict], machine: str, command: str) -> str:
    lines = [f"Machine: {machine}.", "", f"Command: `{command}`.", "",
             "| backbone | batch | precision | pretrain (images/s) | bare tuned loop "
             "(images/s) | pretrain / bare |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['backbone']} | {row['batch_size']} | {row['precision']} | "
                     f"{statistics.median(row['pretrain_images_per_s']):.0f} | "
                     f"{statistics.median(row['bare_images_per_s']):.0f} | "
                     f"{row['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def machine() -> str:
    """The GPU and CUDA version where there is one, then the host."""
    if torch.cuda.is_available():
        return (f"{torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}, "
                + machine_description())
    return machine_description()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write gpu_train.md and gpu_train.json to this folder")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--precision", default="auto", help="the runs' precision setting")
    parser.add_argument("--images", type=int, default=20480, help="dataset size")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per pretrain run")
    parser.add_argument("--repeats", type=int, default=2, help="alternations of the two")
    parser.add_argument("--quick", action="store_true",
                        help="a small CNN on 64 images: checks the code path in seconds")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("benchmarks.gpu_train: no CUDA device; pass --device cpu")
    setups = QUICK_SETUPS if args.quick else SETUPS
    images = 64 if args.quick else args.images
    epochs = 2 if args.quick else args.epochs
    repeats = 1 if args.quick else args.repeats
    rows = run(setups, images, epochs, repeats, args.device, args.precision)
    given = [arg for arg in (sys.argv[1:] if argv is None else argv) if arg != "--write-docs"]
    text = table(rows, machine(), " ".join(["python -m benchmarks.gpu_train", *given]))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_train.md").write_text(text)
        (out / "gpu_train.json").write_text(json.dumps(rows, indent=1) + "\n")
    publish("gpu_train", text, args.write_docs)


if __name__ == "__main__":
    main()
