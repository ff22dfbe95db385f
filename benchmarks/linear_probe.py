"""The linear probe's two solvers on real features: L-BFGS (the default) against 100 epochs of
SGD (the central paper's App. D protocol), top-1 and time.

    python -m benchmarks.linear_probe      # about 20 min on 2 busy cores

Writes the ``linear_probe`` section of docs/benchmarks.md with ``--write-docs``.

The features are those ``evaluate_run`` probes: backbone outputs of the train and test splits,
without augmentation, of short seeded pretraining runs made here in a temporary folder
(digits and mnist5k; small CNN and ResNet-18; SimCLR with and without VRNS, DCL, SigLIP; 1 to
30 epochs, so some are poorly trained), and the raw pixels of both datasets. On each set: SGD
at seed 0 (what ``evaluate_run`` used to report) and its range over seeds 0 to 4, the L-BFGS
probe at its default penalty ``6 / N``, the difference, both times (median over ``--repeats``
rounds in this process, the two solvers alternating), and, for reference, the L-BFGS probe
at a thousandth of the penalty (close to the unpenalized fit): how far 100 epochs of SGD are
from converged, which is why the default penalty is as large as it is.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
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
)

SGD_EPOCHS = 100
SGD_SEEDS = 5
# the reference column: a thousandth of the default penalty
CONVERGED = 1e-3


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


def compare(data: tuple, repeats: int) -> dict:
    """Top-1 of both solvers, SGD's range over seeds, the times, L-BFGS's iterations."""
    from contrastkit.evaluate import linear_probe
    from contrastkit.evaluate.linear import default_l2_penalty

    train_x, train_y, test_x, test_y, classes = data
    iterations = []
    lbfgs = linear_probe(*data, on_epoch=lambda i, _: iterations.append(i))["top1"]
    seeds = [linear_probe(*data, epochs=SGD_EPOCHS, solver="sgd", seed=seed)["top1"]
             for seed in range(SGD_SEEDS)]
    converged = linear_probe(*data, l2_penalty=CONVERGED * default_l2_penalty(len(train_y)))
    times = interleaved_times({
        "sgd": lambda: linear_probe(*data, epochs=SGD_EPOCHS, solver="sgd"),
        "lbfgs": lambda: linear_probe(*data),
    }, repeats)
    return {"rows": len(train_y), "dim": train_x.shape[1], "sgd": seeds[0],
            "sgd_low": min(seeds), "sgd_high": max(seeds), "lbfgs": lbfgs,
            "iterations": len(iterations), "converged": converged["top1"],
            "sgd_s": statistics.median(times["sgd"]),
            "lbfgs_s": statistics.median(times["lbfgs"])}


def table(results: list[tuple[str, dict]]) -> list[str]:
    lines = ["| feature set | N x d | SGD top-1 (seed 0) | SGD, seeds 0-4 | L-BFGS top-1 | "
             "difference | L-BFGS iterations | SGD s | L-BFGS s | speed-up | "
             "L-BFGS, penalty / 1000 |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in results:
        lines.append(
            f"| {label} | {r['rows']} x {r['dim']} | {r['sgd']:.2f} | "
            f"{r['sgd_low']:.2f}-{r['sgd_high']:.2f} | {r['lbfgs']:.2f} | "
            f"{r['lbfgs'] - r['sgd']:+.2f} | {r['iterations']} | {r['sgd_s']:.2f} | "
            f"{r['lbfgs_s']:.3f} | {r['sgd_s'] / r['lbfgs_s']:.0f}x | {r['converged']:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed rounds per feature set (each runs both solvers)")
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
    gaps = [abs(r["lbfgs"] - r["sgd"]) for _, r in results]
    speedups = [r["sgd_s"] / r["lbfgs_s"] for _, r in results]
    lines += [
        "### Linear probe: L-BFGS (penalty 6 / N) against 100 epochs of SGD", "",
        "Top-1 (%) on the test split of frozen backbone features (L2-normalized), the "
        "seconds of one probe (median over the rounds, the solvers alternating), and the "
        "L-BFGS probe at a thousandth of its penalty (nearly the unpenalized fit).", "",
        *table(results), "",
        f"Difference within 0.5 points on {sum(g <= 0.5 for g in gaps)} of {len(gaps)} sets; "
        f"largest {max(gaps):.2f}, mean {statistics.mean(gaps):.2f} points. SGD's own range "
        f"over seeds 0-4: up to "
        f"{max(r['sgd_high'] - r['sgd_low'] for _, r in results):.2f} points. Speed-up: "
        f"median {statistics.median(speedups):.0f}x ({min(speedups):.0f}x to "
        f"{max(speedups):.0f}x)."]
    publish("linear_probe", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
