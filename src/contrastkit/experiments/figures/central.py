"""The central paper's figures (Lee, Lim, Lee, Sohn, "On the Similarities of Embeddings in
Contrastive Learning", ICML 2025, arXiv:2506.09781), means with their 95 % intervals as error
bars (with one seed, no bars), the paper's values labelled with its dataset and model:

- ``variance_vs_batch`` (Table 1): the negative-pair similarity variance against the batch
  size (log base 2), one line per value of the other axes, the paper's values dashed;
- ``accuracy_vs_temperature`` (Fig. 3): accuracy (%) against the temperature (log base 10),
  one line per value of the other axes (with and without VRNS), one panel per accuracy metric;
- ``gain_bars`` (Fig. 4): one column per loss (and value of any other axis but the batch
  size and the compared axis); top, the accuracy (%) of each level of the compared axis (the
  first remaining axis with more than one level: without / with VRNS) per batch size; bottom,
  the gain of its last level over its first in percentage points, a bar per batch size from 0
  with the 95 % t-interval of the per-seed paired gains and a dot per seed.
"""

from __future__ import annotations

import math

from contrastkit.experiments.figures import FIGURES, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import (
    axis_label,
    interval_errors,
    log_axis,
    metric_label,
    paper_label,
    plot_lines,
    seeds_note,
    ticks_on_every_panel,
    title_case,
)
from contrastkit.experiments.results import PERCENT_METRICS, same_level
from contrastkit.experiments.stats import mean_interval

ACCURACY_METRICS = ("linear_top1", "knn_top1")


def _variance_vs_batch(data: FigureData):
    summary, axes, paper = data.summary, data.axes, data.paper
    import matplotlib.pyplot as plt

    if "batch_size" not in axes or not any(e["metric"] == "neg_sim_var" for e in summary):
        return None
    figure, panel = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    plot_lines(panel, summary, "neg_sim_var", "batch_size", axes, paper, data.paper_setting)
    batches = {e["batch_size"] for e in summary if e["metric"] == "neg_sim_var"}
    batches |= {e["batch_size"] for e in paper if e.get("metric") == "neg_sim_var"
                and "batch_size" in e}
    log_axis(panel, batches, "batch_size")
    panel.set(xlabel="batch size (log scale)", ylabel=metric_label("neg_sim_var"),
              title=f"Variance of negative-pair similarities against batch size\n"
                    f"({seeds_note(summary)})")
    panel.grid(alpha=0.3)
    panel.legend(fontsize=8)
    ticks_on_every_panel(figure)
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
    figure, panels = plt.subplots(1, len(metrics), figsize=(6.0 * len(metrics), 4.4),
                                  constrained_layout=True, squeeze=False)
    temperatures = {e["temperature"] for e in summary}
    for panel, metric in zip(panels[0], metrics, strict=True):
        plot_lines(panel, summary, metric, "temperature", axes, paper, data.paper_setting)
        log_axis(panel, temperatures, "temperature")
        panel.set(xlabel="temperature (log scale)", ylabel=metric_label(metric),
                  title=f"{title_case(metric_label(metric))} against temperature")
        panel.grid(alpha=0.3)
        panel.legend(fontsize=8)
    figure.suptitle(f"Accuracy against temperature ({seeds_note(summary)})")
    ticks_on_every_panel(figure)
    return figure


def _gain_bars(data: FigureData):
    summary, axes = data.summary, data.axes
    import matplotlib.pyplot as plt

    metrics = _accuracy_metrics(summary)
    if not {"loss", "batch_size"} <= set(axes) or not metrics:
        return None
    metric = metrics[0]
    entries = [e for e in summary if e["metric"] == metric]
    split = next((axis for axis in axes if axis not in ("loss", "batch_size")
                  and len({str(e[axis]) for e in entries}) > 1), None)
    others = [axis for axis in axes if axis not in ("batch_size", split)]
    groups = list(dict.fromkeys(tuple(e[axis] for axis in others) for e in entries))
    batches = sorted({e["batch_size"] for e in entries})
    levels = sorted({e[split] for e in entries}) if split else [None]
    rows = 2 if len(levels) > 1 else 1
    figure, panels = plt.subplots(rows, len(groups), figsize=(4.6 * len(groups), 3.7 * rows),
                                  constrained_layout=True, squeeze=False, sharey="row")
    for column, group in enumerate(groups):
        where = dict(zip(others, group, strict=True))
        title = ", ".join(str(value) if axis == "loss" else axis_label(axis, value)
                          for axis, value in where.items())
        top = panels[0][column]
        _levels(top, entries, data, metric, split, levels, batches, where)
        top.set(xlabel="batch size", ylabel=metric_label(metric))
        top.set_title(f"{title}\naccuracy per batch size", fontsize=10)
        top.grid(alpha=0.3, axis="y")
        if rows == 2:
            bottom = panels[1][column]
            _gains(bottom, data, metric, split, levels, batches, where)
            bottom.set(xlabel="batch size", ylabel=_gain_unit(metric))
            bottom.set_title(f"{title}\ngain of {axis_label(split, levels[-1])}", fontsize=10)
            bottom.grid(alpha=0.3, axis="y")
    if rows == 2:  # the bars of gains start at 0: the axis holds 0 (the row shares it)
        low, high = panels[1][0].get_ylim()
        panels[1][0].set_ylim(min(low, 0.0), max(high, 0.0))
    handles, labels = panels[0][0].get_legend_handles_labels()
    if rows == 2:
        more, words = panels[1][0].get_legend_handles_labels()
        handles, labels = handles + more, labels + words
    if labels:
        figure.legend(handles, labels, loc="outside lower center",
                      ncols=min(len(labels), 4), fontsize=8)
    gain = (f"; bottom: the gain of {axis_label(split, levels[-1])} over "
            f"{axis_label(split, levels[0])}" if rows == 2 else "")
    figure.suptitle(f"{title_case(metric_label(metric))} per batch size{gain}\n"
                    f"({seeds_note(summary)}; dots: single seeds)", fontsize=11)
    ticks_on_every_panel(figure)
    return figure


def _gain_unit(metric: str) -> str:
    return ("gain (percentage points)" if metric in PERCENT_METRICS
            else f"gain in {metric_label(metric)}")


def _matching(entries, where: dict) -> list[dict]:
    return [e for e in entries if all(same_level(e.get(axis), value)
                                      for axis, value in where.items())]


def _levels(panel, entries, data: FigureData, metric, split, levels, batches, where):
    """Each level's mean with its 95 % interval per batch size (side by side), the paper's
    values as hollow squares."""
    offsets = _offsets(len(levels))
    for index, level in enumerate(levels):
        chosen = [_matching(entries, {**where, "batch_size": batch,
                                      **({split: level} if split else {})}) for batch in batches]
        kept = [(position, cell[0]) for position, cell in enumerate(chosen) if cell]
        if not kept:
            continue
        positions = [position + offsets[index] for position, _ in kept]
        means = [e["mean"] for _, e in kept]
        panel.errorbar(positions, means,
                       yerr=interval_errors(means, [e["ci_low"] for _, e in kept],
                                            [e["ci_high"] for _, e in kept]),
                       color=f"C{index}", marker="o", linestyle="none", capsize=4,
                       label=f"ours, {axis_label(split, level)}" if split else "ours")
        reported = [(position + offsets[index], value) for position, batch in
                    enumerate(batches) if (value := _paper_value(
                        data.paper, metric, {**where, "batch_size": batch,
                                             **({split: level} if split else {})})) is not None]
        if reported:
            panel.plot(*zip(*reported, strict=True), color=f"C{index}", marker="s",
                       markerfacecolor="none", linestyle="none",
                       label=f"{paper_label(data.paper_setting, where)}"
                             + (f", {axis_label(split, level)}" if split else ""))
    panel.set_xticks(range(len(batches)), [str(batch) for batch in batches])
    panel.set_xlim(-0.6, len(batches) - 0.4)


def _gains(panel, data: FigureData, metric, split, levels, batches, where):
    """Per batch size, the gain of the last level over the first: a bar from 0 to the mean of
    the per-seed paired gains with its 95 % t-interval, a dot per seed, the paper's gain as a
    hollow diamond."""
    first, last = levels[0], levels[-1]
    means, errors, positions = [], [], []
    for position, batch in enumerate(batches):
        at = {**where, "batch_size": batch}
        gains = _seed_gains(data.rows, metric, {**at, split: last}, {**at, split: first})
        if not gains:
            continue
        interval = mean_interval(list(gains.values()))
        positions.append(position)
        means.append(interval.mean)
        errors.append(interval.half_width)
        spread = 0.25 * (len(gains) > 1)
        for index, gain in enumerate(gains.values()):
            offset = spread * (index / max(len(gains) - 1, 1) - 0.5)
            panel.plot(position + offset, gain, marker="o", markersize=4, color="black",
                       linestyle="none", label="one seed" if position == positions[0]
                       and index == 0 else None, zorder=3)
        ours = _paper_value(data.paper, metric, {**at, split: last})
        theirs = _paper_value(data.paper, metric, {**at, split: first})
        if ours is not None and theirs is not None:
            panel.plot(position, ours - theirs, marker="D", markerfacecolor="none",
                       markersize=8, color="C3", linestyle="none",
                       label=f"{paper_label(data.paper_setting, where)}, gain"
                       if position == positions[0] else None, zorder=4)
    yerr = None if any(map(math.isnan, errors)) else errors
    panel.bar(positions, means, 0.6, yerr=yerr, capsize=4, color="C1", alpha=0.6,
              label="ours, mean gain ± 95 % interval")
    panel.axhline(0.0, color="black", linewidth=0.8)
    panel.set_xticks(range(len(batches)), [str(batch) for batch in batches])
    panel.set_xlim(-0.6, len(batches) - 0.4)


def _seed_gains(rows, metric: str, treatment: dict, control: dict) -> dict:
    """Seed -> the treatment's value minus the control's (each the mean over its matching
    cells), for the seeds both have."""
    def per_seed(where):
        values: dict = {}
        for row in rows:
            if row["metric"] == metric and all(same_level(row.get(axis), value)
                                               for axis, value in where.items()):
                values.setdefault(row["seed"], []).append(row["value"])
        return {seed: sum(found) / len(found) for seed, found in values.items()}

    a, b = per_seed(treatment), per_seed(control)
    return {seed: a[seed] - b[seed] for seed in sorted(set(a) & set(b))}


def _paper_value(paper, metric: str, where: dict):
    """The paper's value of ``metric`` at ``where``: an entry that names the batch size and
    agrees with ``where`` on every axis it names; ``None`` if there is none."""
    for entry in paper:
        named = {key: value for key, value in entry.items() if key not in ("metric", "value")}
        if (entry.get("metric") == metric and "batch_size" in named
                and all(axis in where and same_level(where[axis], value)
                        for axis, value in named.items())):
            return entry["value"]
    return None


def _offsets(count: int) -> list[float]:
    """Horizontal offsets that set ``count`` series side by side around each position."""
    width = 0.5 / max(count, 1)
    return [(index - (count - 1) / 2) * width for index in range(count)]


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
