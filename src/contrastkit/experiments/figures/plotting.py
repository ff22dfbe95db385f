"""Plotting helpers shared by the report's figures: legend labels, lines of means with their
intervals beside the paper's values, log axes on the grid's levels."""

from __future__ import annotations

import math

from contrastkit.experiments.results import same_level


def axis_label(axis: str, value) -> str:
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
    return ", ".join(axis_label(axis, value) for axis, value in zip(others, key, strict=True)) or (
        "ours")


def _paper_points(paper, metric: str, x_axis: str, axes: list[str], key: tuple) -> list[tuple]:
    """The paper's (x, value) of ``metric`` on the line ``key`` (its other axis values)."""
    others = dict(zip([axis for axis in axes if axis != x_axis], key, strict=True))
    return sorted((entry[x_axis], entry["value"]) for entry in paper
                  if entry.get("metric") == metric and x_axis in entry
                  and all(same_level(entry[axis], value) for axis, value in others.items()
                          if axis in entry))


def seeds_note(summary) -> str:
    counts = sorted({entry["n"] for entry in summary})
    if counts == [1]:
        return "1 seed: no interval"
    return f"mean ± 95 % interval over {'/'.join(map(str, counts))} seeds"


def plot_lines(panel, summary, metric, x_axis, axes, paper):
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


def log_axis(panel, values, base: int):
    """A log x-axis whose ticks are exactly the grid's levels."""
    from matplotlib.ticker import FixedLocator, NullLocator

    panel.set_xscale("log", base=base)
    panel.xaxis.set_major_locator(FixedLocator(sorted(values)))
    panel.xaxis.set_minor_locator(NullLocator())
    panel.set_xticklabels([f"{value:g}" for value in sorted(values)])
    low, high = min(values), max(values)
    panel.set_xlim(low / 1.4, high * 1.4)
