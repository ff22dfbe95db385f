"""The training curves of a run as a PNG: loss parts, learning rate, negative similarities."""

from __future__ import annotations

import json
from pathlib import Path


def read_metrics(path: Path) -> list[dict]:
    """The JSON lines of ``metrics.jsonl``, one dict per epoch."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_curves(metrics: list[dict], loss_parts: list[str], path: Path) -> Path:
    """Three panels against the epoch: each loss part, the lr, and the mean and variance of
    the in-batch negative-pair similarities. Written with matplotlib's Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [m["epochs_completed"] for m in metrics]
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.6), constrained_layout=True)
    for part in loss_parts:
        axes[0].plot(epochs, [m[part] for m in metrics], label=part)
    axes[0].set(title="loss and its parts, unweighted (epoch mean)", xlabel="epoch")
    axes[0].legend()
    axes[1].plot(epochs, [m["lr"] for m in metrics])
    axes[1].set(title="learning rate", xlabel="epoch")
    axes[2].plot(epochs, [m["neg_sim_var"] for m in metrics], label="variance")
    axes[2].plot(epochs, [m["neg_sim_mean"] for m in metrics], label="mean")
    axes[2].set(title="negative-pair cosine similarity (in batch)", xlabel="epoch")
    axes[2].legend()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return Path(path)
