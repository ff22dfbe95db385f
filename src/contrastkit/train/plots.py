"""The figures of a run as PNGs: the training curves (loss parts, learning rate, negative
similarities, the online probe's accuracies), and for a SigLIP run that learns its scale and
bias, their phase-diagram trajectory."""

from __future__ import annotations

import json
from pathlib import Path

from .progress import ONLINE_ACCURACIES


def read_metrics(path: Path) -> list[dict]:
    """The JSON lines of ``metrics.jsonl``, one dict per epoch; a damaged line (a file cut
    short by a full disk or a copy that stopped) is a ``ValueError`` naming the file and the
    line."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            record = error.msg
        if not isinstance(record, dict):
            raise ValueError(f"{path} line {number} is not a JSON object of an epoch's "
                             f"metrics ({record}): the file is damaged; delete that line and "
                             f"the lines after it (the run's checkpoint holds what training "
                             f"needs) and resume again")
        records.append(record)
    return records


def plot_run(config, history: list[dict], loss_parts: list[str], curves: Path,
             phase: Path) -> None:
    """The figures of a finished run: ``curves`` (a PNG) of its ``history`` (the epochs'
    metrics; ``loss_parts`` the parts of a sum of losses), and, for a run that learned SigLIP's
    scale and bias, ``phase``: their trajectory from the ``config``'s start over the sigmoid
    loss's phase diagram for the run's batch
    (:func:`~contrastkit.train.phase_plot.plot_phase_trajectory`)."""
    from contrastkit.files import run_folder_io

    from .phase_plot import plot_phase_trajectory

    with run_folder_io("write", curves):
        plot_curves(history, loss_parts, curves)
    if "siglip_scale" in history[-1]:  # learned: the config holds the start
        start = {"epochs_completed": 0, "siglip_scale": config.siglip_scale,
                 "siglip_bias": config.siglip_bias}
        plot_phase_trajectory([start, *history], config.batch_size, phase)


def plot_curves(metrics: list[dict], loss_parts: list[str], path: Path) -> Path:
    """Write :func:`curves_figure` to ``path`` as a PNG (matplotlib's Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = curves_figure(metrics, loss_parts)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return Path(path)


def curves_figure(metrics: list[dict], loss_parts: list[str]):
    """Three panels against the epoch: each loss part, the lr, and the mean and variance of
    the in-batch negative-pair similarities; a fourth, the online probe's linear and kNN top-1,
    when the run has one (over the epochs it probed). Every epoch is a marker on its line, so a
    run of one epoch shows its points too, and the epoch axis has whole-number ticks."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    epochs = [m["epochs_completed"] for m in metrics]
    probed = [m for m in metrics if ONLINE_ACCURACIES[0] in m]
    figure, axes = plt.subplots(1, 4 if probed else 3, figsize=(17.3 if probed else 13, 3.6))
    # fixed margins: a layout engine doubles the time of drawing the figure
    figure.subplots_adjust(left=0.05, right=0.99, bottom=0.15, top=0.9, wspace=0.22)
    style = {"marker": "o", "markersize": 4 if len(metrics) < 30 else 2}
    for part in loss_parts:
        axes[0].plot(epochs, [m[part] for m in metrics], label=part, **style)
    axes[0].set(title="loss and its parts, unweighted (epoch mean)")
    axes[0].legend()
    axes[1].plot(epochs, [m["lr"] for m in metrics], **style)
    axes[1].set(title="learning rate")
    axes[2].plot(epochs, [m["neg_sim_var"] for m in metrics], label="variance", **style)
    axes[2].plot(epochs, [m["neg_sim_mean"] for m in metrics], label="mean", **style)
    axes[2].set(title="negative-pair cosine similarity (in batch)")
    axes[2].legend()
    if probed:
        for key, label in zip(ONLINE_ACCURACIES, ("linear", "kNN"), strict=True):
            axes[3].plot([m["epochs_completed"] for m in probed], [m[key] for m in probed],
                         label=label, **style)
        axes[3].set(title="online probe: top-1 on the test split (%)")
        axes[3].legend()
    for panel in axes:
        panel.set(xlabel="epoch")
        panel.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    return figure
