"""The figures of a reproduction report, drawn like the paper's from the summary over seeds
(means with the half-width of their 95 % interval as error bars; with one seed, no bars):

- ``variance_vs_batch`` (Table 1): the negative-pair similarity variance against the batch
  size, one line per value of the other axes, the paper's values dashed;
- ``accuracy_vs_temperature`` (Fig. 3): accuracy against the temperature, one line per value of
  the other axes (with and without VRNS), one panel per accuracy metric;
- ``gain_bars`` (Fig. 4): one panel per loss, bars per batch size for each level of the
  remaining axis (without / with VRNS), the gain of the last level over the first written
  above each group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from contrastkit.experiments.results import same_level

FIGURES = ("variance_vs_batch", "accuracy_vs_temperature", "gain_bars")
ACCURACY_METRICS = ("linear_top1", "knn_top1")


def figure_kinds(choice, axes: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """The figures to draw: ``choice`` (a recipe's ``figure``: one name, a list of names, or
    ``"none"``) when given, else every figure whose axes and metric the results have."""
    if choice is not None:
        kinds = [choice] if isinstance(choice, str) else list(choice)
        for kind in kinds:
            if kind not in (*FIGURES, "none"):
                raise ValueError(f"figure must be one of {(*FIGURES, 'none')}, got {kind!r}")
        return [kind for kind in kinds if kind != "none"]
    has_accuracy = any(metric in metrics for metric in ACCURACY_METRICS)
    wanted = {
        "variance_vs_batch": "batch_size" in axes and "neg_sim_var" in metrics,
        "accuracy_vs_temperature": "temperature" in axes and has_accuracy,
        "gain_bars": {"loss", "batch_size"} <= set(axes) and has_accuracy,
    }
    return [kind for kind in FIGURES if wanted[kind]]


def draw_figures(kinds: Sequence[str], summary: Sequence[dict], axes: Sequence[str],
                 paper: Sequence[dict], out: Path) -> list[Path]:
    """Draw each figure of ``kinds`` to ``out/<kind>.png`` (matplotlib's Agg backend); a figure
    whose metric or axis is not in the summary is left out. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    draw = {"variance_vs_batch": _variance_vs_batch,
            "accuracy_vs_temperature": _accuracy_vs_temperature, "gain_bars": _gain_bars}
    written = []
    for kind in kinds:
        figure = draw[kind](summary, list(axes), paper)
        if figure is None:
            continue
        path = Path(out) / f"{kind}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def _label(axis: str, value) -> str:
    """A legend label for an axis value; VRNS reads as the paper writes it."""
    if axis == "vrns":
        return "without VRNS" if value == 0 else f"VRNS λ={value:g}"
    return f"{axis}={value}"


def _lines(summary, metric: str, x_axis: str, axes: list[str]) -> dict[tuple, list[tuple]]:
    """(other axis values) -> sorted [(x, mean, half-width (NaN with one seed))] of ``metric``."""
    others = [axis for axis in axes if axis != x_axis]
    lines: dict[tuple, list[tuple]] = {}
    for entry in summary:
        if entry["metric"] == metric:
            half = (entry["ci_high"] - entry["ci_low"]) / 2
            point = (entry[x_axis], entry["mean"], half)
            lines.setdefault(tuple(entry[axis] for axis in others), []).append(point)
    return {key: sorted(points) for key, points in sorted(lines.items(), key=str)}


def _line_label(axes: list[str], x_axis: str, key: tuple) -> str:
    others = [axis for axis in axes if axis != x_axis]
    return ", ".join(_label(axis, value) for axis, value in zip(others, key, strict=True)) or (
        "ours")


def _paper_points(paper, metric: str, x_axis: str, axes: list[str], key: tuple) -> list[tuple]:
    """The paper's (x, value) of ``metric`` on the line ``key`` (its other axis values)."""
    others = dict(zip([axis for axis in axes if axis != x_axis], key, strict=True))
    return sorted((entry[x_axis], entry["value"]) for entry in paper
                  if entry.get("metric") == metric and x_axis in entry
                  and all(same_level(entry[axis], value) for axis, value in others.items()
                          if axis in entry))


def _seeds_note(summary) -> str:
    counts = sorted({entry["n"] for entry in summary})
    if counts == [1]:
        return "1 seed: no interval"
    return f"mean ± 95 % interval over {'/'.join(map(str, counts))} seeds"


def _plot_lines(panel, summary, metric, x_axis, axes, paper):
    """One line per other-axis value with error bars, the paper's values dashed beside it."""
    for index, (key, points) in enumerate(_lines(summary, metric, x_axis, axes).items()):
        color = f"C{index}"
        xs, means, halves = zip(*points, strict=True)
        panel.errorbar(xs, means, yerr=None if any(map(math.isnan, halves)) else halves,
                       color=color, marker="o", capsize=4,
                       label=_line_label(axes, x_axis, key))
        reported = _paper_points(paper, metric, x_axis, axes, key)
        if reported:
            px, pv = zip(*reported, strict=True)
            panel.plot(px, pv, color=color, linestyle="--", marker="s", markerfacecolor="none",
                       label=f"paper, {_line_label(axes, x_axis, key)}")


def _log_axis(panel, values, base: int):
    """A log x-axis whose ticks are exactly the grid's levels."""
    from matplotlib.ticker import FixedLocator, NullLocator

    panel.set_xscale("log", base=base)
    panel.xaxis.set_major_locator(FixedLocator(sorted(values)))
    panel.xaxis.set_minor_locator(NullLocator())
    panel.set_xticklabels([f"{value:g}" for value in sorted(values)])
    low, high = min(values), max(values)
    panel.set_xlim(low / 1.4, high * 1.4)


def _variance_vs_batch(summary, axes, paper):
    import matplotlib.pyplot as plt

    if "batch_size" not in axes or not any(e["metric"] == "neg_sim_var" for e in summary):
        return None
    figure, panel = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    _plot_lines(panel, summary, "neg_sim_var", "batch_size", axes, paper)
    batches = {e["batch_size"] for e in summary if e["metric"] == "neg_sim_var"}
    batches |= {e["batch_size"] for e in paper if e.get("metric") == "neg_sim_var"
                and "batch_size" in e}
    _log_axis(panel, batches, 2)
    panel.set(xlabel="batch size", ylabel="variance of negative-pair similarities",
              title=f"Negative-pair similarity variance ({_seeds_note(summary)})")
    panel.grid(alpha=0.3)
    panel.legend(fontsize=8)
    return figure


def _accuracy_metrics(summary) -> list[str]:
    present = {entry["metric"] for entry in summary}
    return [metric for metric in ACCURACY_METRICS if metric in present]


def _accuracy_vs_temperature(summary, axes, paper):
    import matplotlib.pyplot as plt

    metrics = _accuracy_metrics(summary)
    if "temperature" not in axes or not metrics:
        return None
    figure, panels = plt.subplots(1, len(metrics), figsize=(6.0 * len(metrics), 4.2),
                                  constrained_layout=True, squeeze=False)
    temperatures = {e["temperature"] for e in summary}
    for panel, metric in zip(panels[0], metrics, strict=True):
        _plot_lines(panel, summary, metric, "temperature", axes, paper)
        _log_axis(panel, temperatures, 10)
        panel.set(xlabel="temperature", ylabel=f"{metric} accuracy", title=metric)
        panel.grid(alpha=0.3)
        panel.legend(fontsize=8)
    figure.suptitle(f"Accuracy against temperature ({_seeds_note(summary)})")
    return figure


def _gain_bars(summary, axes, paper):
    import matplotlib.pyplot as plt

    metrics = _accuracy_metrics(summary)
    if not {"loss", "batch_size"} <= set(axes) or not metrics:
        return None
    metric = metrics[0]
    split = next((axis for axis in axes if axis not in ("loss", "batch_size")), None)
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
    figure.suptitle(f"{metric} per batch size and loss ({_seeds_note(summary)}){note}",
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
                  label=_label(split, level) if split else None)
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
