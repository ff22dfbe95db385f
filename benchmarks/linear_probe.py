"""The linear probe on real features: the exact L-BFGS probe (the default) against the paper's
SGD probe (App. D: lr 0.1, momentum 0.9, batch 256, cosine, no weight decay), both for 100
epochs (what ``evaluate_run`` ran before) and for the paper's number of steps; top-1 and time.

    python -m benchmarks.linear_probe      # about 25 min on 2 cores

Writes the ``linear_probe`` section of docs/benchmarks.md with ``--write-docs``.

The paper's probe is 200 epochs on CIFAR's 50 000 images, 39 200 steps; the L-BFGS probe's
penalty (``contrastkit.evaluate.linear.L2_PENALTY``) is what those steps amount to. On our
small datasets such epochs are a few thousand steps or fewer. So each feature set gets: SGD
for 100 epochs (seed 0; ``evaluate_run``'s probe before), SGD for the paper's 39 200 steps
(seeds 0 and 1), and the L-BFGS probe; the
difference of L-BFGS from the paper-length SGD (the agreement it is built for) and from the
100-epoch SGD (how much that under-fits); and the seconds of each probe (the 100-epoch SGD and
L-BFGS: median over ``--repeats`` rounds in this process, the two alternating; the
paper-length SGD, minutes long: the median of its two seeds' runs).

The features are those ``evaluate_run`` probes: backbone outputs of the train and test splits,
without augmentation, of short seeded pretraining runs made here in a temporary folder
(digits and MNIST-5k; small CNNs and ResNet-18; SimCLR with and without VRNS, DCL, SigLIP; 1 to
30 epochs, so some are poorly trained), and the raw pixels of both datasets.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks._report import add_write_docs_flag, interleaved_times, machine_description, publish

# (label, dataset, pretraining settings or None for the raw pixels)
FEATURE_SETS = (
    ("digits pixels", "digits", None),
    ("digits, small CNN, SimCLR + VRNS, 1 epoch", "digits", {"epochs": 1}),
    ("digits, small CNN, SimCLR + VRNS, 10 epochs", "digits", {"epochs": 10}),
    ("digits, small CNN, SimCLR + VRNS, 30 epochs", "digits", {"epochs": 30}),
    ("digits, small CNN, SimCLR, 10 epochs", "digits", {"epochs": 10, "vrns": 0.0}),
    ("digits, small CNN, DCL + VRNS, 10 epochs", "digits", {"epochs": 10, "loss": "dcl"}),
    ("digits, small CNN, SigLIP + VRNS, 10 epochs", "digits", {"epochs": 10, "loss": "siglip"}),
    ("digits, ResNet-18, SimCLR + VRNS, 2 epochs", "digits",
     {"epochs": 2, "backbone": "resnet18"}),
    ("mnist5k pixels", "mnist5k", None),
    ("mnist5k, small CNN, DCL, 1 epoch", "mnist5k",
     {"epochs": 1, "loss": "dcl", "vrns": 0.0, "batch_size": 128}),
    ("mnist5k, small CNN, SimCLR + VRNS, 3 epochs", "mnist5k", {"epochs": 3, "batch_size": 128}),
    ("mnist5k, small CNN, SimCLR, 8 epochs", "mnist5k",
     {"epochs": 8, "vrns": 0.0, "batch_size": 128}),
    ("mnist5k, strided small CNN, SimCLR, 20 epochs", "mnist5k",
     {"epochs": 20, "vrns": 0.0, "batch_size": 128, "backbone": "small_cnn_strided"}),
)

SGD_EPOCHS = 100
SGD_SEEDS = 2


def pixels(dataset: str) -> tuple[torch.Tensor, ...]:
    """Raw pixels (uint8, flattened) and labels of both splits, and the number of classes."""
    from contrastkit.data import load_dataset

    train, test = load_dataset(dataset, "train"), load_dataset(dataset, "test")
    return (train.images.flatten(1), train.labels, test.images.flatten(1), test.labels,
            train.info.num_classes)


def pretrained(folder: str, label: str, dataset: str, settings: dict) -> tuple[torch.Tensor, ...]:
    """Backbone features and labels of both splits after a seeded pretraining run."""
    from contrastkit.data import load_dataset
    from contrastkit.evaluate import embed_run
    from contrastkit.train import PretrainConfig, pretrain

    name = "".join(c if c.isalnum() else "-" for c in label)
    config = PretrainConfig(runs_dir=folder, name=name, dataset=dataset, seed=0, device="cpu",
                            progress=False, **settings)
    pretrain(config)
    arrays = []
    for split in ("train", "test"):
        path = embed_run(config.run_dir, split, out=Path(folder) / f"{name}-{split}.npz",
                         device="cpu", progress=False)
        with np.load(path) as saved:
            arrays += [torch.from_numpy(saved["features"]), torch.from_numpy(saved["labels"])]
    return (*arrays, load_dataset(dataset, "train").info.num_classes)


def paper_epochs(rows: int) -> int:
    """Epochs of batches of 256 over ``rows`` rows that make the paper's probe steps."""
    from contrastkit.evaluate.linear import PAPER_PROBE_STEPS

    return -(-PAPER_PROBE_STEPS // -(-rows // 256))


def compare(data: tuple, repeats: int) -> dict:
    """Top-1 of the three probes (the paper-length SGD at seeds 0 and 1), their times, and the
    L-BFGS iterations."""
    from contrastkit.evaluate import linear_probe

    train_x, train_y = data[0], data[1]
    epochs = paper_epochs(len(train_y))
    iterations = []
    lbfgs = linear_probe(*data, on_epoch=lambda i, _: iterations.append(i))["top1"]
    short = linear_probe(*data, epochs=SGD_EPOCHS, solver="sgd")["top1"]
    paper, paper_seconds = [], []
    for seed in range(SGD_SEEDS):  # long: each is timed once, not in the alternating rounds
        start = time.perf_counter()
        paper.append(linear_probe(*data, epochs=epochs, solver="sgd", seed=seed)["top1"])
        paper_seconds.append(time.perf_counter() - start)
    times = interleaved_times({
        "short": lambda: linear_probe(*data, epochs=SGD_EPOCHS, solver="sgd"),
        "lbfgs": lambda: linear_probe(*data),
    }, repeats)
    times["paper"] = paper_seconds
    seconds = {name: statistics.median(values) for name, values in times.items()}
    return {"rows": len(train_y), "dim": train_x.shape[1], "epochs": epochs, "short": short,
            "paper": paper[0], "paper_low": min(paper), "paper_high": max(paper),
            "lbfgs": lbfgs, "iterations": len(iterations), **{f"{k}_s": v
                                                               for k, v in seconds.items()}}


def table(results: list[tuple[str, dict]]) -> list[str]:
    lines = ["| feature set | N x d | SGD, 100 epochs | SGD, paper's steps (seeds 0, 1) | "
             "L-BFGS | L-BFGS - paper SGD | L-BFGS - 100-epoch SGD | s: 100-epoch SGD | "
             "s: paper SGD | s: L-BFGS | L-BFGS iterations |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in results:
        lines.append(
            f"| {label} | {r['rows']} x {r['dim']} | {r['short']:.2f} | "
            f"{r['paper_low']:.2f}-{r['paper_high']:.2f} | {r['lbfgs']:.2f} | "
            f"{r['lbfgs'] - r['paper']:+.2f} | {r['lbfgs'] - r['short']:+.2f} | "
            f"{r['short_s']:.2f} | {r['paper_s']:.1f} | {r['lbfgs_s']:.2f} | "
            f"{r['iterations']} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed rounds per feature set (each runs the three probes)")
    parser.add_argument("--sets", type=int, default=len(FEATURE_SETS),
                        help="only the first SETS feature sets (a quick look)")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.linear_probe` (repeats: {args.repeats}).", ""]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for label, dataset, settings in FEATURE_SETS[:args.sets]:
            data = pixels(dataset) if settings is None else pretrained(folder, label, dataset,
                                                                        settings)
            results.append((label, compare(data, args.repeats)))
            print(table(results)[-1], flush=True)
    gaps = [abs(r["lbfgs"] - r["paper"]) for _, r in results]
    under = [r["lbfgs"] - r["short"] for _, r in results]
    speedups = [r["paper_s"] / r["lbfgs_s"] for _, r in results]
    short_speedups = [r["short_s"] / r["lbfgs_s"] for _, r in results]
    lines += [
        "### Linear probe: exact L-BFGS against the paper's SGD, at 100 epochs and at the "
        "paper's steps", "",
        "Top-1 (%) on the test split of frozen backbone features (L2-normalized), and the "
        "seconds of one probe (median over the rounds, the probes alternating).", "",
        *table(results), "",
        f"L-BFGS against SGD run for the paper's 39 200 steps: within 0.5 points on "
        f"{sum(g <= 0.5 for g in gaps)} of {len(gaps)} sets (largest difference "
        f"{max(gaps):.2f}, mean {statistics.mean(gaps):.2f}), "
        f"{statistics.median(speedups):.0f}x faster (median; {min(speedups):.0f}x to "
        f"{max(speedups):.0f}x). Against 100 epochs of SGD (the probe before): "
        f"{min(under):+.1f} to {max(under):+.1f} points, the short SGD under-fitting, and "
        f"{statistics.median(short_speedups):.1f}x the speed (median)."]
    publish("linear_probe", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
