"""The sigmoid paper's figures (Lee, Chang & Sohn, "Analysis of Using Sigmoid Loss for Contrastive
Learning", AISTATS 2024, arXiv:2402.12613), from the summary over seeds:

- ``sigmoid_phase`` (Fig. 2): heat maps of the measured ``s`` over ``(N, t = b)``, one per
  ``dim``, and the theory's ``s`` (``d >= N``) beside them, Theorem 2's thresholds drawn over
  each (blue: ETF above; red: antipodal below);
- ``sigmoid_vs_t`` (Fig. 3): the measured ``s`` against ``t = b``, one line per ``N``, the
  theory's dashed;
- ``ccem_spheres`` (Fig. 1): the CCEM of each ``delta`` of the results on the unit sphere.
"""

from __future__ import annotations

import math

from contrastkit.experiments.figures import FIGURES, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import seeds_note

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
    figure.suptitle(f"Normalized positive similarity s ({seeds_note(summary)})", fontsize=10)
    figure.tight_layout()
    return figure


def _sigmoid_vs_t(data: FigureData):
    import matplotlib.pyplot as plt

    summary = data.summary
    if not {"N", "t"} <= set(data.axes):
        return None
    figure, panel = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    for index, n in enumerate(sorted({entry["N"] for entry in summary})):
        for metric, style, label in (("s_measured", "-o", f"N = {n}"),
                                     ("s_theory", "--", f"theory, N = {n}")):
            points = sorted((entry["t"], entry["mean"]) for entry in summary
                            if entry["metric"] == metric and entry["N"] == n)
            panel.plot(*zip(*points, strict=True), style, color=f"C{index}", markersize=3,
                       label=label)
    panel.set(xlabel="t = b", ylabel="s = (1 + mean u_i.v_i) / 2", ylim=(-0.05, 1.05),
              title=f"Encoder, d = N ({seeds_note(summary)})")
    panel.grid(alpha=0.3)
    panel.legend(fontsize=7, ncols=2)
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
