"""The sigmoid paper's figures (Lee, Chang & Sohn, "Analysis of Using Sigmoid Loss for Contrastive
Learning", AISTATS 2024, arXiv:2402.12613), from the summary over seeds:

- ``sigmoid_phase`` (Fig. 2): heat maps of the measured ``s`` over ``(N, t = b)``, one per
  ``dim``, and the theory's ``s`` (``d >= N``) beside them, Theorem 2's thresholds drawn over
  each (blue: ETF above; red: antipodal below);
- ``sigmoid_vs_t`` (Fig. 3): the measured ``s`` against ``t = b`` with its 95 % intervals, one
  line per ``N``, the theory's dashed;
- ``ccem_spheres`` (Fig. 1): the CCEM of each ``delta`` of the results on the unit sphere.
"""

from __future__ import annotations

import math

from contrastkit.experiments.figures import FIGURES, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import (
    interval_errors,
    seeds_note,
    ticks_on_every_panel,
)

DIM_TITLES = {"full": "d = N", "half": "d = ceil(N/2)"}


def _means(summary, metric: str, **where) -> dict[tuple, float]:
    """``(N, t) -> mean`` of ``metric`` over the summary entries matching ``where``."""
    return {(entry["N"], entry["t"]): entry["mean"] for entry in summary
            if entry["metric"] == metric and all(entry.get(k) == v for k, v in where.items())}


def _grid(means: dict[tuple, float], ns: list, ts: list):
    """The ``(len(ts), len(ns))`` array of ``means`` (NaN where a point is missing)."""
    import numpy as np

    return np.array([[means.get((n, t), math.nan) for n in ns] for t in ts])


def _sigmoid_phase(data: FigureData):
    from contrastkit.simulate.figures import sigmoid_phase_figure

    summary = data.summary
    if not {"dim", "N", "t"} <= set(data.axes):
        return None
    ns = sorted({entry["N"] for entry in summary})
    ts = sorted({entry["t"] for entry in summary})
    dims = [dim for dim in DIM_TITLES if any(entry["dim"] == dim for entry in summary)]
    panels = [(f"measured s, {DIM_TITLES[dim]}",
               _grid(_means(summary, "s_measured", dim=dim), ns, ts)) for dim in dims]
    panels.append(("theory's s (Theorem 2, d >= N)", _grid(_means(summary, "s_theory"), ns,
                                                           ts)))
    figure = sigmoid_phase_figure(ns, ts, panels)
    figure.suptitle(f"Normalized positive similarity s over N and t = b, measured and by "
                    f"Theorem 2 (measured: mean over seeds, {seeds_note(summary)})",
                    fontsize=10)
    figure.tight_layout()
    return figure


def _sigmoid_vs_t(data: FigureData):
    import matplotlib.pyplot as plt

    summary = data.summary
    if not {"N", "t"} <= set(data.axes):
        return None
    figure, panel = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    for index, n in enumerate(sorted({entry["N"] for entry in summary})):
        measured = sorted((entry["t"], entry["mean"], entry["ci_low"], entry["ci_high"])
                          for entry in summary
                          if entry["metric"] == "s_measured" and entry["N"] == n)
        if measured:
            ts, means, lows, highs = zip(*measured, strict=True)
            panel.errorbar(ts, means, yerr=interval_errors(means, lows, highs), fmt="-o",
                           color=f"C{index}", markersize=3, capsize=3,
                           label=f"ours, N = {n}")
        theory = sorted((entry["t"], entry["mean"]) for entry in summary
                        if entry["metric"] == "s_theory" and entry["N"] == n)
        if theory:
            panel.plot(*zip(*theory, strict=True), "--", color=f"C{index}",
                       label=f"Theorem 2, N = {n}")
    panel.set(xlabel="t = b", ylabel="s = (1 + mean u_i.v_i) / 2", ylim=(-0.05, 1.05),
              title=f"Normalized positive similarity s against t = b: encoder with d = N\n"
                    f"(ours solid, {seeds_note(summary)}; the theory dashed)")
    panel.grid(alpha=0.3)
    panel.legend(fontsize=7, ncols=2)
    ticks_on_every_panel(figure)
    return figure


def _ccem_spheres(data: FigureData):
    from contrastkit import theory
    from contrastkit.simulate.figures import sphere_panels_figure

    if "delta" not in data.axes:
        return None
    entries = [entry for entry in data.summary if entry["metric"] == "angle_deg"]
    panels = []
    for entry in sorted(entries, key=lambda entry: entry["delta"]):
        delta = entry["delta"]
        u, v = theory.ccem(3, 3, delta)
        panels.append((f"delta = {delta:g}: angle(u_i, v_i) = {entry['mean']:.0f} degrees",
                       u, v))
    return sphere_panels_figure(panels) if panels else None


FIGURES.register("sigmoid_phase", FigureSpec(_sigmoid_phase))
FIGURES.register("sigmoid_vs_t", FigureSpec(_sigmoid_vs_t))
FIGURES.register("ccem_spheres", FigureSpec(_ccem_spheres))
