"""The figures of LMCL (Chen, Niu, Gong, Li, Yang, Sugiyama, "Large-Margin Contrastive Learning
with Distance Polarization Regularizer", ICML 2021), drawn from files the cells wrote
(declared, so an evidence folder keeps them):

- ``toy_scatter`` (Fig. 3): one row per toy set, one panel per method (the raw points for
  ``euclidean``, the unit embeddings ``P x / |P x|`` for CL and LMCL), coloured by class, from
  each cell's ``points.npz`` of its first seed;
- ``distance_histograms`` (Fig. 2): one panel per cell, the density of the negative-pair
  distances ``(1 - cos) / 2`` summed over the cell's seeds (from each run's ``eval.json``),
  the margin band (the run's ``config.yaml``) shaded.
"""

from __future__ import annotations

import json
from typing import Any

from contrastkit.experiments.figures import FIGURES, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import axis_label, ticks_on_every_panel

POINTS_FILE = "points.npz"
EVAL_FILE = "eval.json"
CONFIG_FILE = "config.yaml"


def _cells(data: FigureData) -> dict[str, dict]:
    """Cell id -> its axis values, in the order of the rows."""
    cells: dict[str, dict] = {}
    for row in data.rows:
        cells.setdefault(row["cell"], {axis: row.get(axis) for axis in data.axes})
    return cells


def _toy_scatter(data: FigureData):
    import matplotlib.pyplot as plt
    import numpy as np

    if not {"dataset", "method"} <= set(data.axes):
        return None
    cells = _cells(data)
    datasets = list(dict.fromkeys(axes["dataset"] for axes in cells.values()))
    methods = list(dict.fromkeys(axes["method"] for axes in cells.values()))
    figure, panels = plt.subplots(len(datasets), len(methods), squeeze=False,
                                  figsize=(3.2 * len(methods), 3.2 * len(datasets)),
                                  constrained_layout=True)
    drawn = False
    for cell, axes in cells.items():
        paths = data.cell_paths(cell, POINTS_FILE)
        panel = panels[datasets.index(axes["dataset"])][methods.index(axes["method"])]
        raw = axes["method"] == "euclidean"
        panel.set(title=f"{axes['dataset']}: {axes['method']}",
                  xlabel="x_1" if raw else "(P x / |P x|)_1",
                  ylabel="x_2" if raw else "(P x / |P x|)_2")
        panel.set_aspect("equal", adjustable="datalim")
        if not paths:
            continue
        with np.load(paths[0]) as saved:
            shown = saved["points"] if raw else saved["embedded"]
            labels = saved["labels"]
        panel.scatter(shown[:, 0], shown[:, 1], c=labels, cmap="viridis", s=6, alpha=0.6)
        drawn = True
    if not drawn:
        plt.close(figure)
        return None
    figure.suptitle("Raw points (euclidean) and unit embeddings P x / |P x| (cl, lmcl), "
                    "first seed; colour: class")
    ticks_on_every_panel(figure)
    return figure


def _distance_histograms(data: FigureData):
    import matplotlib.pyplot as plt

    histograms = {cell: _summed_histogram(data, cell) for cell in _cells(data)}
    histograms = {cell: found for cell, found in histograms.items() if found is not None}
    if not histograms:
        return None
    figure, panels = plt.subplots(1, len(histograms), squeeze=False, sharey=True,
                                  figsize=(3.6 * len(histograms), 3.4), constrained_layout=True)
    for panel, (cell, (edges, counts, band, seeds)) in zip(panels[0], histograms.items(),
                                                          strict=True):
        total = sum(counts) or 1
        widths = [high - low for low, high in zip(edges[:-1], edges[1:], strict=True)]
        panel.bar(edges[:-1], [c / (total * w) for c, w in zip(counts, widths, strict=True)],
                  width=widths, align="edge", color="C0")
        panel.axvspan(*band, color="C3", alpha=0.15, label="margin band")
        panel.set(title=_cell_title(cell), xlabel="distance (1 - cos) / 2", xlim=(0, 1))
        panel.text(0.98, 0.95, f"{seeds} seed(s)", ha="right", va="top", fontsize=8,
                   transform=panel.transAxes)
    panels[0][0].set(ylabel="density of negative-pair distances")
    panels[0][0].legend(fontsize=8, loc="upper left")
    figure.suptitle("Density of the distances between different images' embeddings after "
                    "pretraining (negative pairs, all seeds)")
    ticks_on_every_panel(figure)
    return figure


def _summed_histogram(data: FigureData, cell: str):
    """``(edges, negative counts summed over seeds, band, seeds)`` from the cell's eval.json
    files, or ``None`` when none holds a distance histogram."""
    edges, counts, band, seeds = None, None, None, 0
    for seed in data.seeds(cell):
        path = data.cell_file(cell, seed, EVAL_FILE)
        if path is None:
            continue
        saved = json.loads(path.read_text())
        histogram = saved.get("distance_histogram")
        if histogram is None:
            continue
        negative = histogram["counts"]["negative"]
        edges = histogram["edges"]
        counts = negative if counts is None else [a + b for a, b in zip(counts, negative,
                                                                        strict=True)]
        band = _band(data.cell_file(cell, seed, CONFIG_FILE))
        seeds += 1
    return None if counts is None else (edges, counts, band, seeds)


def _band(path) -> tuple[float, float]:
    """The margin band of a run (its config.yaml at ``path``; the defaults if ``None``)."""
    from contrastkit.train.config import PretrainConfig
    from contrastkit.yaml_files import read_yaml

    config: Any = read_yaml(path, str(path)) if path is not None else {}
    defaults = PretrainConfig()
    return (config.get("delta_plus", defaults.delta_plus),
            config.get("delta_minus", defaults.delta_minus))


def _cell_title(cell: str) -> str:
    parts = [part.split("=", 1) for part in cell.split(",") if "=" in part]
    return ", ".join(axis_label(axis, value) for axis, value in parts) or cell


FIGURES.register("toy_scatter", FigureSpec(_toy_scatter, cell_files=(POINTS_FILE,)))
FIGURES.register("distance_histograms", FigureSpec(_distance_histograms,
                                                   cell_files=(EVAL_FILE, CONFIG_FILE)))
