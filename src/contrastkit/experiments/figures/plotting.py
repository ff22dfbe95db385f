"""Plotting helpers shared by the report's figures: metric names with their units, legend
labels, lines of means with their intervals beside the paper's values (labelled with the
paper's dataset and model), log axes on the grid's levels (one base per axis name across the
report), tick labels on every panel."""

from __future__ import annotations

import math

from contrastkit.experiments.results import PERCENT_METRICS, same_level

#: What each metric is, with its unit, for axis labels and titles.
METRIC_LABELS = {
    "linear_top1": "linear-probe top-1 accuracy (%)",
    "linear_top5": "linear-probe top-5 accuracy (%)",
    "knn_top1": "kNN top-1 accuracy (%)",
    "knn_top5": "kNN top-5 accuracy (%)",
    "half_linear_top1": "linear-probe top-1 accuracy half-way (%)",
    "kmeans_accuracy": "K-means accuracy (%)",
    "neg_sim_var": "variance of negative-pair similarities",
    "neg_sim_mean": "mean negative-pair similarity",
    "pos_sim_mean": "mean positive-pair similarity",
    "margin_fraction": "share of negative pairs in the margin band",
    "ncm_top1": "nearest-class-mean accuracy (share)",
    "within_class_distance": "within-class distance",
    "equinorm": "spread of class-mean norms",
    "equiangularity": "spread of class-mean angles",
    "etf_distance": "distance to a simplex ETF",
}
#: The log base of each axis that is drawn on a log scale, the same in every figure.
LOG_BASES = {"batch_size": 2, "temperature": 10}
#: Datasets and backbones as the papers name them.
DATASET_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "imagenet": "ImageNet",
                 "imagenet100": "ImageNet-100", "mnist": "MNIST", "mnist5k": "MNIST-5k",
                 "digits": "digits (8x8)", "stl10": "STL-10", "imagefolder": "ImageFolder",
                 "tiny_imagenet": "Tiny-ImageNet"}
BACKBONE_NAMES = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "small_cnn": "small CNN",
                  "small_cnn_strided": "small CNN (strided)", "mlp": "MLP"}


def metric_label(metric: str) -> str:
    """The metric in words with its unit (``linear_top1`` -> ``linear-probe top-1 accuracy
    (%)``); an accuracy in percent not listed still says ``(%)``."""
    if metric in METRIC_LABELS:
        return METRIC_LABELS[metric]
    return f"{metric} (%)" if metric in PERCENT_METRICS else metric


def title_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def axis_label(axis: str | None, value: object) -> str:
    """A legend label for an axis value; VRNS reads as the paper writes it."""
    if axis == "vrns":
        return "without VRNS" if value == 0 else f"VRNS λ={value:g}"
    return f"{axis}={value}"


def paper_setting(recipe) -> dict[str, str]:
    """The paper's ``dataset`` and ``model`` in words (``{"dataset": "CIFAR-100", "model":
    "ResNet-18"}``), from the paper tier's settings over the recipe's ``base`` (a dataset that
    is a grid axis of the paper tier: its levels joined by `` / ``); a key neither sets is
    absent (a simulation has neither)."""
    tiers = getattr(recipe, "tiers", None) or {}
    tier = tiers.get("paper")
    settings = {**(getattr(recipe, "base", None) or {}),
                **(getattr(tier, "set", None) or {})}
    grid = {**(getattr(recipe, "grid", None) or {}), **(getattr(tier, "grid", None) or {})}
    found = {}
    for key, word, names in (("dataset", "dataset", DATASET_NAMES),
                             ("backbone", "model", BACKBONE_NAMES)):
        levels = grid.get(key) or ([settings[key]] if key in settings else [])
        if levels:
            found[word] = " / ".join(names.get(str(level), str(level)) for level in levels)
    return found


def paper_label(setting: dict | None, entry: dict | None = None) -> str:
    """``paper (CIFAR-100, ResNet-18)``: the paper's dataset and model (``setting``, see
    :func:`paper_setting`); an entry of the paper's values that names its own dataset says
    that one."""
    setting = dict(setting or {})
    if entry and "dataset" in entry:
        setting["dataset"] = DATASET_NAMES.get(str(entry["dataset"]), str(entry["dataset"]))
    words = ", ".join(setting[key] for key in ("dataset", "model") if setting.get(key))
    return f"paper ({words})" if words else "paper"


def _lines(summary, metric: str, x_axis: str, axes: list[str]) -> dict[tuple, list[tuple]]:
    """(other axis values) -> sorted [(x, mean, ci_low, ci_high)] of ``metric`` (NaN bounds
    with one seed)."""
    others = [axis for axis in axes if axis != x_axis]
    lines: dict[tuple, list[tuple]] = {}
    for entry in summary:
        if entry["metric"] == metric:
            point = (entry[x_axis], entry["mean"], entry["ci_low"], entry["ci_high"])
            lines.setdefault(tuple(entry[axis] for axis in others), []).append(point)
    return {key: sorted(points) for key, points in sorted(lines.items(), key=str)}


def interval_errors(means, lows, highs):
    """matplotlib's ``yerr`` of intervals that need not be symmetric (a clipped one is not):
    ``[below, above]``; ``None`` when a bound is NaN (one seed)."""
    if any(math.isnan(value) for value in (*lows, *highs)):
        return None
    return [[mean - low for mean, low in zip(means, lows, strict=True)],
            [high - mean for mean, high in zip(means, highs, strict=True)]]


def _line_label(axes: list[str], x_axis: str, key: tuple) -> str:
    """The line's other axis values in words, after a comma (empty for a single line)."""
    others = [axis for axis in axes if axis != x_axis]
    words = ", ".join(axis_label(axis, value) for axis, value in zip(others, key, strict=True))
    return f", {words}" if words else ""


def _paper_points(paper, metric: str, x_axis: str, axes: list[str], key: tuple) -> list[tuple]:
    """The paper's (x, value, entry) of ``metric`` on the line ``key`` (its other axis
    values)."""
    others = dict(zip([axis for axis in axes if axis != x_axis], key, strict=True))
    return sorted(((entry[x_axis], entry["value"], entry) for entry in paper
                   if entry.get("metric") == metric and x_axis in entry
                   and all(same_level(entry[axis], value) for axis, value in others.items()
                           if axis in entry)), key=lambda point: point[:2])


def seeds_note(summary) -> str:
    counts = sorted({entry["n"] for entry in summary})
    if counts == [1]:
        return "1 seed: no interval"
    return f"mean ± 95 % interval over {'/'.join(map(str, counts))} seeds"


def plot_lines(panel, summary, metric, x_axis, axes, paper, setting: dict | None = None):
    """One line per other-axis value with its 95 % intervals as error bars, the paper's values
    dashed beside it, labelled with the paper's dataset and model (``setting``)."""
    for index, (key, points) in enumerate(_lines(summary, metric, x_axis, axes).items()):
        color = f"C{index}"
        xs, means, lows, highs = zip(*points, strict=True)
        panel.errorbar(xs, means, yerr=interval_errors(means, lows, highs), color=color,
                       marker="o", capsize=4, label=f"ours{_line_label(axes, x_axis, key)}")
        reported = _paper_points(paper, metric, x_axis, axes, key)
        if reported:
            px, pv, entries = zip(*reported, strict=True)
            panel.plot(px, pv, color=color, linestyle="--", marker="s", markerfacecolor="none",
                       label=f"{paper_label(setting, entries[0])}"
                             f"{_line_label(axes, x_axis, key)}")


def log_axis(panel, values, axis: str):
    """A log x-axis whose ticks are exactly the grid's levels, in the base of ``axis``
    (:data:`LOG_BASES`, 10 for an axis not listed), so an axis reads alike in every
    figure."""
    from matplotlib.ticker import FixedLocator, NullLocator

    panel.set_xscale("log", base=LOG_BASES.get(axis, 10))
    panel.xaxis.set_major_locator(FixedLocator(sorted(values)))
    panel.xaxis.set_minor_locator(NullLocator())
    panel.set_xticklabels([f"{value:g}" for value in sorted(values)])
    low, high = min(values), max(values)
    panel.set_xlim(low / 1.4, high * 1.4)


def ticks_on_every_panel(figure) -> None:
    """Tick labels on both axes of every 2-d panel (shared axes hide them by default)."""
    for panel in figure.axes:
        if getattr(panel, "name", "") == "rectilinear" and panel.axison and getattr(
                panel, "_colorbar", None) is None:
            panel.tick_params(labelleft=True, labelbottom=True)
