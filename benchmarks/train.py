"""Pretraining throughput, batched vs per-image augmentation, and Table 1 in miniature.

    python -m benchmarks.train                    # everything (about 20 min on 2 busy cores)
    python -m benchmarks.train --skip-table1      # throughput and augmentation only

Writes the ``train`` section of docs/benchmarks.md.

1. Pretraining steps per second on the CPU at global batch 256: digits + small CNN, and
   CIFAR-shaped random images + CIFAR ResNet-18; the time of a step split into augmentation
   (two views), forward + backward of the encoder, and the loss (SimCLR + 30 VRNS, forward and
   backward through the loss alone).
2. Images/s of the batched augmentation (CIFAR recipe, 32x32) vs torchvision's per-image PIL
   pipeline with the same operations.
3. The paper's Table 1 in miniature: digits at batch 64, SimCLR with and without VRNS
   (lambda 30), 3 seeds; the variance of negative-pair similarities among augmented pairs at
   the projector output after pretraining, with linear-probe and kNN accuracy.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from benchmarks._report import add_write_docs_flag, machine_description, median_seconds, publish
from contrastkit import losses
from contrastkit.data import augmentation_for, load_dataset
from contrastkit.models import build_encoder


def step_split(backbone: str, images: torch.Tensor, augment, steps: int) -> dict:
    """Median seconds of the three parts of a training step, and images/s of the whole."""
    channels = images.shape[1]
    encoder = build_encoder(backbone, channels, (0.5,) * channels, (0.25,) * channels)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01, momentum=0.9)
    objective = losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=50_000)
    generator = torch.Generator().manual_seed(0)
    batch = images.float() / 255
    parts = {"augmentation": [], "forward + backward": [], "loss": []}
    for step in range(steps + 1):
        start = time.perf_counter()
        views = [augment(batch, generator) for _ in range(2)]
        augmented = time.perf_counter()
        z1, z2 = encoder(views[0]), encoder(views[1])
        forwarded = time.perf_counter()
        d1, d2 = z1.detach().requires_grad_(), z2.detach().requires_grad_()
        total = objective.compute(d1, d2).total
        total.backward()
        lossed = time.perf_counter()
        optimizer.zero_grad()
        torch.autograd.backward([z1, z2], [d1.grad, d2.grad])
        optimizer.step()
        done = time.perf_counter()
        if step:  # the first step warms up
            parts["augmentation"].append(augmented - start)
            parts["forward + backward"].append(forwarded - augmented + done - lossed)
            parts["loss"].append(lossed - forwarded)
    medians = {name: statistics.median(times) for name, times in parts.items()}
    medians["images/s"] = images.shape[0] / sum(medians.values())
    return medians


def augmentation_speed(batch_size: int = 256) -> tuple[float, float]:
    """Images/s of the batched CIFAR augmentation and of torchvision's PIL pipeline, both on
    one thread (the PIL pipeline runs in one thread of Python)."""
    from PIL import Image
    from torchvision import transforms

    generator = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (batch_size, 3, 32, 32), dtype=torch.uint8,
                           generator=generator)
    augment = augmentation_for("cifar10", 32)
    batch = pixels.float() / 255
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    batched = median_seconds(lambda: augment(batch, generator), repeats=9)
    torch.set_num_threads(threads)
    pil_images = [Image.fromarray(image.permute(1, 2, 0).numpy()) for image in pixels]
    pipeline = transforms.Compose([
        transforms.RandomResizedCrop(32, scale=(0.08, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.RandomApply([transforms.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        transforms.RandomGrayscale(p=0.2),
        transforms.ToTensor(),
    ])
    per_image = median_seconds(lambda: torch.stack([pipeline(im) for im in pil_images]),
                               repeats=5)
    return batch_size / batched, batch_size / per_image


def table1_miniature(seeds=(0, 1, 2), epochs: int = 50, batch_size: int = 64) -> list[dict]:
    """Pretrain SimCLR with and without VRNS on digits for each seed and evaluate.

    Runs with one thread: the models are tiny, and on a shared machine two threads per
    process spend most of their time waiting for each other."""
    from contrastkit.evaluate import evaluate_run
    from contrastkit.train import PretrainConfig, pretrain

    rows = []
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as runs:
        for seed in seeds:
            for weight in (0.0, 30.0):
                config = PretrainConfig(runs_dir=runs, name=f"s{seed}-v{weight:g}", seed=seed,
                                        vrns=weight, epochs=epochs, batch_size=batch_size,
                                        device="cpu", progress=False)
                pretrain(config)
                result = evaluate_run(config.run_dir, device="cpu")
                rows.append({"seed": seed, "vrns": weight, **result})
                print(f"seed {seed} vrns {weight:g}: neg var {result['neg_sim_var']:.4f}, "
                      f"linear {result['linear_top1']:.2f}, kNN {result['knn_top1']:.2f}",
                      flush=True)
    return rows


def _mean_std(values: list[float], digits: int = 2) -> str:
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-table1", action="store_true")
    parser.add_argument("--steps", type=int, default=2, help="timed ResNet-18 steps")
    parser.add_argument("--epochs", type=int, default=50, help="Table 1 pretraining epochs")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.train{' --skip-table1' if args.skip_table1 else ''}`"
             f" (pretraining epochs for Table 1: {args.epochs}).", "",
             "### Pretraining step on the CPU, global batch 256 (median seconds per step)", "",
             "| data + backbone | augmentation | forward + backward | loss | images/s |",
             "|---|---|---|---|---|"]
    generator = torch.Generator().manual_seed(0)
    digits = load_dataset("digits", "train").images[:256]
    cifar_shaped = torch.randint(0, 256, (256, 3, 32, 32), dtype=torch.uint8,
                                 generator=generator)
    for label, backbone, images, augment, steps in (
        ("digits 8x8 + small CNN", "small_cnn", digits, augmentation_for("digits", 8), 20),
        ("random 32x32 RGB + CIFAR ResNet-18", "resnet18", cifar_shaped,
         augmentation_for("cifar10", 32), args.steps),
    ):
        split = step_split(backbone, images, augment, steps)
        print(label, split, flush=True)
        lines.append(f"| {label} | {split['augmentation']:.3f} | "
                     f"{split['forward + backward']:.3f} | {split['loss']:.4f} | "
                     f"{split['images/s']:.0f} |")
    batched, per_image = augmentation_speed()
    print("augmentation", batched, per_image, flush=True)
    lines += ["", "### SimCLR augmentation of 256 CIFAR-sized images (images/s)", "",
              "Both on one CPU thread; on a GPU the batched path runs on the device.", "",
              "| batched on tensors (contrastkit) | per-image PIL (torchvision) | ratio |",
              "|---|---|---|",
              f"| {batched:.0f} | {per_image:.0f} | {batched / per_image:.1f}x |"]
    if not args.skip_table1:
        rows = table1_miniature(epochs=args.epochs)
        lines += ["", "### Table 1 in miniature: digits, batch 64, 3 seeds (mean ± sd)", "",
                  "Variance of negative-pair cosine similarities among augmented pairs of all "
                  "1 437 training images, at the projector output, after pretraining (the "
                  "paper's Table 1 protocol at small scale); linear probe and kNN top-1 on the "
                  "360 test images.", "",
                  "| objective | negative-similarity variance | linear top-1 (%) | "
                  "kNN top-1 (%) |", "|---|---|---|---|"]
        for weight, name in ((0.0, "SimCLR (t = 0.2)"), (30.0, "SimCLR + 30 VRNS")):
            chosen = [r for r in rows if r["vrns"] == weight]
            lines.append(f"| {name} | {_mean_std([r['neg_sim_var'] for r in chosen], 5)} | "
                         f"{_mean_std([r['linear_top1'] for r in chosen])} | "
                         f"{_mean_std([r['knn_top1'] for r in chosen])} |")
        lines += ["", "Per seed (variance without / with VRNS): " + "; ".join(
            f"seed {s}: {rows[2 * s]['neg_sim_var']:.5f} / {rows[2 * s + 1]['neg_sim_var']:.5f}"
            for s in range(3)) + "."]
    publish("train", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
