"""The figure of docs/monitoring.md: a SimilarityMonitor over two short SimCLR runs on the
digits, with and without VRNS, beside the theory's reference lines.

    python -m benchmarks.monitoring_figure                # about two minutes of one CPU thread
    python -m benchmarks.monitoring_figure --write-docs   # into docs/figures/

Each run trains the library's small CNN with its projector (d = 128) on scikit-learn's digits
(1 437 training images, 8x8) with the digits' SimCLR augmentation, as ``contrastkit pretrain``
does by default: batch 64, SGD (lr 0.075 = 0.3 x 64 / 256, momentum 0.9, weight decay 1e-4;
3 epochs of linear warm-up, then cosine decay), SimCLR at temperature 0.2, and SimCLR + 30
VRNS (the central paper's Table 1 objective). The monitor
(``SimilarityMonitor(n=1437, log_every=11)``, two windows an epoch) is fed the projector's
output of the two views at every step. Seeded: the same command draws the same figure on the
same machine (up to the floating-point rounding of its BLAS).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import torch

from benchmarks._report import add_write_docs_flag
from contrastkit import losses
from contrastkit.data import augmentation_for, load_dataset
from contrastkit.models import build_encoder
from contrastkit.monitor import SimilarityMonitor
from contrastkit.train.optim import build_scheduler

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "figures" / "monitoring-digits.png"
BATCH, LOG_EVERY, VRNS_WEIGHT, WARMUP_EPOCHS = 64, 11, 30.0, 3
RUNS = {"SimCLR": 0.0, "SimCLR + 30 VRNS": VRNS_WEIGHT}


def train(vrns: float, epochs: int, seed: int = 0) -> list[tuple[int, dict[str, float]]]:
    """``(step, window statistics)`` of one run with VRNS weight ``vrns``."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    data = load_dataset("digits", "train")
    images, n = data.images.float() / 255, len(data)
    encoder = build_encoder("small_cnn", 1, data.info.mean, data.info.std)
    objective = losses.SimCLR(temperature=0.2)
    if vrns:
        objective = objective + vrns * losses.VRNS(n=n)
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.3 * BATCH / 256, momentum=0.9,
                                weight_decay=1e-4)
    steps_per_epoch = n // BATCH
    scheduler = build_scheduler(optimizer, WARMUP_EPOCHS * steps_per_epoch,
                                epochs * steps_per_epoch)
    augment = augmentation_for("digits", 8)
    monitor = SimilarityMonitor(n=n, log_every=LOG_EVERY)
    windows, step = [], 0
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        for rows in order[: n - n % BATCH].split(BATCH):
            batch = images[rows]
            u, v = encoder(augment(batch, generator)), encoder(augment(batch, generator))
            loss = objective(u, v)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if (stats := monitor.update(u, v)) is not None:
                windows.append((step, stats))
    return windows


def plot(runs: dict[str, list[tuple[int, dict[str, float]]]], n: int, path: Path) -> None:
    """Four panels over the steps: the mean and variance of the negative pairs among all the
    rows of a window (across its batches: estimates of the dataset's, which Theorems 5.1 and
    5.5 are about), the positive mean and the effective rank, with the theory's lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reference = next(iter(runs.values()))[0][1]
    panels = (
        ("window_negative_mean", "negative mean (all pairs of a window)",
         [("theory_negative_mean", "-1/(n-1), Thm 5.1")]),
        ("window_negative_var", "negative variance (all pairs of a window)",
         [("theory_negative_var_low", "Thm 5.5 low"), ("theory_negative_var_high",
                                                        "Thm 5.5 high")]),
        ("positive_mean", "positive mean", []),
        ("effective_rank", "effective rank (both views)", []),
    )
    figure, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for axis, (key, title, lines) in zip(axes, panels, strict=True):
        for label, windows in runs.items():
            axis.plot([s for s, _ in windows], [w[key] for _, w in windows], label=label)
        for (line, name), style in zip(lines, (":", "--"), strict=False):
            axis.axhline(reference[line], color="black", linestyle=style, linewidth=1,
                         label=f"{name}: {reference[line]:.4g}")
        axis.set_title(title)
        axis.set_xlabel("step")
        axis.legend(fontsize=7)
    figure.suptitle(f"SimilarityMonitor on digits (n = {n}, batch {BATCH}, window {LOG_EVERY} "
                    "steps)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(FIGURE.name),
                        help=f"where the PNG goes (default: ./{FIGURE.name})")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    out = FIGURE if args.write_docs else args.out
    torch.set_num_threads(1)
    runs = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for label, weight in RUNS.items():
            runs[label] = train(weight, args.epochs)
            last = runs[label][-1][1]
            print(f"{label}: window negative mean {last['window_negative_mean']:.4f}, "
                  f"window negative var {last['window_negative_var']:.4f}, positive mean "
                  f"{last['positive_mean']:.3f}, effective rank {last['effective_rank']:.1f}")
    for warning in caught:
        print("warning:", warning.message)
    plot(runs, len(load_dataset("digits", "train")), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
