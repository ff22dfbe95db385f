"""The central paper's figures (Lee, Lim, Lee, Sohn, "On the Similarities of Embeddings in
Contrastive Learning", ICML 2025, arXiv:2506.09781), means with the half-width of their 95 %
interval as error bars (with one seed, no bars):

- ``variance_vs_batch`` (Table 1): the negative-pair similarity variance against the batch
  size, one line per value of the other axes, the paper's values dashed;
- ``accuracy_vs_temperature`` (Fig. 3): accuracy against the temperature, one line per value of
  the other axes (with and without VRNS), one panel per accuracy metric;
- ``gain_bars`` (Fig. 4): one panel per loss, bars per batch size for each level of the
  first remaining axis with more than one level (without / with VRNS), the gain of the last
  level over the first written above each group.
"""

from __future__ import annotations

import math

from contrastkit.experiments.figures import FIGURES, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import axis_label, log_axis, plot_lines, seeds_note

ACCURACY_METRICS = ("linear_top1", "knn_top1")


def _variance_vs_batch(data: FigureData):
    summary, axes, paper = data.summary, data.axes, data.paper
    import matplotlib.pyplot as plt

    if "batch_size" not in axes or not any(e["metric"] == "neg_sim_var" for e in summary):
        return None
    figure, panel = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    plot_lines(panel, summary, "neg_sim_var", "batch_size", axes, paper)
    batches = {e["batch_size"] for e in summary if e["metric"] == "neg_sim_var"}
    batches |= {e["batch_size"] for e in paper if e.get("metric") == "neg_sim_var"
                and "batch_size" in e}
    log_axis(panel, batches, 2)
    panel.set(xlabel="batch size", ylabel="variance of negative-pair similarities",
              title=f"Negative-pair similarity variance ({seeds_note(summary)})")
    panel.grid(alpha=0.3)
    panel.legend(fontsize=8)
    return figure


def _accuracy_metrics(summary) -> list[str]:
    present = {entry["metric"] for entry in summary}
    return [metric for metric in ACCURACY_METRICS if metric in present]


def _accuracy_vs_temperature(data: FigureData):
    summary, axes, paper = data.summary, data.axes, data.paper
    import matplotlib.pyplot as plt

    metrics = _accuracy_metrics(summary)
    if "temperature" not in axes or not metrics:
        return None
    figure, panels = plt.subplots(1, len(metrics), figsize=(6.0 * len(metrics), 4.2),
                                  constrained_layout=True, squeeze=False)
    temperatures = {e["temperature"] for e in summary}
    for panel, metric in zip(panels[0], metrics, strict=True):
        plot_lines(panel, summary, metric, "temperature", axes, paper)
        log_axis(panel, temperatures, 10)
        panel.set(xlabel="temperature", ylabel=f"{metric} accuracy", title=metric)
        panel.grid(alpha=0.3)
        panel.legend(fontsize=8)
    figure.suptitle(f"Accuracy against temperature ({seeds_note(summary)})")
    return figure


def _gain_bars(data: FigureData):
    summary, axes = data.summary, data.axes
    import matplotlib.pyplot as plt

    metrics = _accuracy_metrics(summary)
    if not {"loss", "batch_size"} <= set(axes) or not metrics:
        return None
    metric = metrics[0]
    split = next((axis for axis in axes if axis not in ("loss", "batch_size")
                  and len({str(e[axis]) for e in summary}) > 1), None)
    losses = list(dict.fromkeys(e["loss"] for e in summary if e["metric"] == metric))
    figure, panels = plt.subplots(1, len(losses), figsize=(4.6 * len(losses), 4.4),
                                  constrained_layout=True, squeeze=False, sharey=True)
    for panel, loss in zip(panels[0], losses, strict=True):
        _bars(panel, [e for e in summary if e["metric"] == metric and e["loss"] == loss], split)
        panel.set(title=loss, xlabel="batch size")
    panels[0][0].set(ylabel=f"{metric} accuracy")
    handles, labels = panels[0][0].get_legend_handles_labels()
    if labels:
        figure.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    note = (f"\nabove each group: the gain of {labels[-1]} over {labels[0]}"
            if len(labels) > 1 else "")
    figure.suptitle(f"{metric} per batch size and loss ({seeds_note(summary)}){note}",
                    fontsize=11)
    return figure


def _bars(panel, entries, split):
    """Bars per batch size, one per level of ``split`` (averaged over any further axis), error
    bars where seeds give an interval, the gain of the last level over the first written at the
    top of each group; the y-axis spans the bars and their error bars."""
    batches = sorted({e["batch_size"] for e in entries})
    levels = sorted({e[split] for e in entries}) if split else [None]
    width = 0.8 / len(levels)
    heights = {}
    extent = []
    for index, level in enumerate(levels):
        chosen = [[e for e in entries if e["batch_size"] == batch
                   and (split is None or e[split] == level)] for batch in batches]
        heights[level] = [sum(e["mean"] for e in cell) / len(cell) for cell in chosen]
        halves = [max((e["ci_high"] - e["ci_low"]) / 2 for e in cell) for cell in chosen]
        errors = None if any(map(math.isnan, halves)) else halves
        positions = [b + (index - (len(levels) - 1) / 2) * width for b in range(len(batches))]
        panel.bar(positions, heights[level], width, yerr=errors, capsize=3, color=f"C{index}",
                  label=axis_label(split, level) if split else None)
        extent += [h + sign * e for h, e in zip(heights[level], errors or [0.0] * len(batches),
                                                strict=True) for sign in (-1, 1)]
    low, high = min(extent), max(extent)
    margin = max(high - low, 0.02) * 0.15
    panel.set_ylim(max(0.0, low - 3 * margin), high + 2 * margin)
    if split and len(levels) > 1:
        _mark_gains(panel, heights[levels[0]], heights[levels[-1]])
    panel.set_xticks(range(len(batches)), [str(batch) for batch in batches])


def _mark_gains(panel, first: list[float], last: list[float]):
    """Write ``last - first`` at the top of each group of bars."""
    for position, (before, after) in enumerate(zip(first, last, strict=True)):
        panel.text(position, 0.97, f"{after - before:+.3f}", ha="center", va="top",
                   transform=panel.get_xaxis_transform(), fontsize=9, fontweight="bold")


def _has_accuracy(metrics) -> bool:
    return any(metric in metrics for metric in ACCURACY_METRICS)


FIGURES.register("variance_vs_batch", FigureSpec(
    _variance_vs_batch, wanted=lambda axes, metrics: "batch_size" in axes
    and "neg_sim_var" in metrics))
FIGURES.register("accuracy_vs_temperature", FigureSpec(
    _accuracy_vs_temperature, wanted=lambda axes, metrics: "temperature" in axes
    and _has_accuracy(metrics)))
FIGURES.register("gain_bars", FigureSpec(
    _gain_bars, wanted=lambda axes, metrics: {"loss", "batch_size"} <= set(axes)
    and _has_accuracy(metrics)))
