"""The hard-negative paper's figures (Jiang, Nguyen, Aeron, Ishwar, "Hard-Negative Sampling for
Contrastive Learning: Optimal Representation Geometry and Neural- vs Dimensional-Collapse",
arXiv:2311.05139), drawn from the files its ``hardneg`` cells write (declared: ``curves.json``,
and of ``representation.npz`` the arrays ``z``, ``labels`` and ``spectrum``):

- ``nc_curves`` (Figs. 3, 9): the neural-collapse metrics against the epoch, one panel per
  metric and value of the other axes but ``beta``, one line per ``beta`` (mean over seeds);
- ``representations`` (Fig. 2): the final 2-d representations of the first seed of every
  cell, coloured by class, with the unit circle;
- ``class_mean_spectra`` (Fig. 4): ``log(sigma_i / sigma_1)`` of the class-mean covariance
  against ``i``, one panel per value of the other axes, one line per ``beta`` (mean over seeds);
  a column per ``loss`` (SCL left, UCL right, as in Fig. 4), a row per value of the others;
- ``ucl_bound_vs_classes`` (Figs. 5, 6): Theorem 3's UCL bound against the number of classes
  ``num_classes``, one line per ``k``, one panel per ``psi``, with the loss the runs reached
  (``train_loss``, mean and 95 % interval over seeds), from the summary.
"""

from __future__ import annotations

import json

import numpy as np

from contrastkit.experiments.figures import FIGURES, CellFile, FigureData, FigureSpec
from contrastkit.experiments.figures.plotting import (
    interval_errors,
    metric_label,
    seeds_note,
    ticks_on_every_panel,
)

CURVE_PANELS = ("within_class_distance", "equinorm", "equiangularity", "etf_distance")
CURVES, REPRESENTATION = "curves.json", "representation.npz"


def _cells(data: FigureData) -> dict[str, dict]:
    """Cell id -> its axis values, from the tidy rows."""
    cells: dict[str, dict] = {}
    for row in data.rows:
        cells.setdefault(row["cell"], {axis: row.get(axis) for axis in data.axes})
    return cells


def _groups(data: FigureData) -> dict[tuple, dict[object, str]]:
    """(axis values but beta) -> {beta: cell id}: a panel per group, a line per beta."""
    others = [axis for axis in data.axes if axis != "beta"]
    groups: dict[tuple, dict[object, str]] = {}
    for cell, axes in _cells(data).items():
        group = tuple((axis, axes[axis]) for axis in others)
        groups.setdefault(group, {})[axes.get("beta")] = cell
    return dict(sorted(groups.items(), key=str))


def _label(group: tuple) -> str:
    return ", ".join(f"{axis}={value}" for axis, value in group) or "all cells"


def _mean_curve(data: FigureData, cell: str, metric: str):
    """Epochs and the mean over seeds of ``metric`` (the seeds' common epochs)."""
    curves = [json.loads(path.read_text()) for path in data.cell_paths(cell, CURVES)]
    if not curves:
        return None
    length = min(len(curve) for curve in curves)
    epochs = [point["epoch"] for point in curves[0][:length]]
    return epochs, np.mean([[point[metric] for point in curve[:length]] for curve in curves],
                           axis=0)


def _nc_curves(data: FigureData):
    import matplotlib.pyplot as plt

    groups = _groups(data)
    if not any(data.cell_paths(cell, CURVES) for cells in groups.values()
               for cell in cells.values()):
        return None
    figure, panels = plt.subplots(len(groups), len(CURVE_PANELS), squeeze=False,
                                  figsize=(3.6 * len(CURVE_PANELS), 3.0 * len(groups)),
                                  constrained_layout=True)
    for row, (group, cells) in zip(panels, groups.items(), strict=True):
        for panel, metric in zip(row, CURVE_PANELS, strict=True):
            for index, (beta, cell) in enumerate(sorted(cells.items(), key=str)):
                curve = _mean_curve(data, cell, metric)
                if curve is not None:
                    panel.plot(*curve, color=f"C{index}", label=f"beta={beta}")
            _symlog(panel)
            panel.set(title=f"{metric_label(metric)}\n{_label(group)}", xlabel="epoch",
                      ylabel="value (symlog, linear below 1e-3)")
            panel.grid(alpha=0.3)
    panels[0][0].legend(fontsize=8)
    figure.suptitle("Neural-collapse metrics of the training set per epoch (0 at neural "
                    "collapse; mean over seeds)")
    ticks_on_every_panel(figure)
    return figure


def _symlog(panel, linthresh: float = 1e-3) -> None:
    """A symmetric-log y-axis (the metrics reach 0) with ticks at 1, 2 and 5 times the powers
    of 10, or at every integer multiple where those leave fewer than two in the panel's range
    (a panel spanning less than a decade), labelled as plain numbers."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter, SymmetricalLogLocator

    panel.set_yscale("symlog", linthresh=linthresh)
    low, high = panel.get_ylim()
    subs = [1, 2, 5]
    powers = 10.0 ** np.arange(-4, 4)
    if sum(low <= sub * power <= high for sub in subs for power in powers) < 2:
        subs = list(range(1, 10))
    panel.yaxis.set_major_locator(SymmetricalLogLocator(linthresh=linthresh, base=10,
                                                        subs=subs))
    panel.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def _first_seed_file(data: FigureData, cell: str):
    paths = data.cell_paths(cell, REPRESENTATION)
    return paths[0] if paths else None


def _representations(data: FigureData):
    import matplotlib.pyplot as plt

    cells = {cell: path for cell in _cells(data)
             if (path := _first_seed_file(data, cell)) is not None}
    loaded = {}
    for cell, path in cells.items():
        with np.load(path) as saved:
            loaded[cell] = {key: saved[key] for key in ("z", "labels")}
    loaded = {cell: arrays for cell, arrays in loaded.items() if arrays["z"].shape[1] == 2}
    if not loaded:
        return None
    columns = min(4, len(loaded))
    rows = -(-len(loaded) // columns)
    figure, panels = plt.subplots(rows, columns, squeeze=False, figsize=(3.2 * columns,
                                                                         3.4 * rows),
                                  constrained_layout=True)
    circle = np.linspace(0, 2 * np.pi, 200)
    for panel, (cell, arrays) in zip(panels.flat, loaded.items(), strict=False):
        panel.plot(np.cos(circle), np.sin(circle), color="0.7", linewidth=0.8)
        panel.scatter(*arrays["z"].T, c=arrays["labels"], cmap="brg", s=6, alpha=0.6)
        panel.set(title=cell.replace(",", ", "), aspect="equal", xlim=(-1.15, 1.15),
                  ylim=(-1.15, 1.15), xlabel="z_1", ylabel="z_2")
        panel.title.set_fontsize(8)
    for panel in list(panels.flat)[len(loaded):]:
        panel.axis("off")
    figure.suptitle("Final 2-d representations of the training set, unit circle in grey "
                    "(first seed; colour: class)")
    ticks_on_every_panel(figure)
    return figure


def _row_then_loss(group: tuple) -> tuple:
    """A panel's place: the axes but ``loss`` (a row of Fig. 4), then ``loss`` (its column)."""
    axes = dict(group)
    loss = axes.pop("loss", None)
    return str(sorted(axes.items(), key=str)), str(loss)


def _class_mean_spectra(data: FigureData):
    import matplotlib.pyplot as plt

    groups = _groups(data)
    spectra: dict = {}
    for group, cells in groups.items():
        for beta, cell in cells.items():
            values = []
            for path in data.cell_paths(cell, REPRESENTATION):
                with np.load(path) as saved:
                    values.append(saved["spectrum"])
            if values:
                spectra.setdefault(group, {})[beta] = np.mean(values, axis=0)
    if not spectra:
        return None
    spectra = dict(sorted(spectra.items(), key=lambda item: _row_then_loss(item[0])))
    columns = len({dict(group).get("loss") for group in spectra}) if "loss" in data.axes \
        else min(4, len(spectra))
    rows = -(-len(spectra) // columns)
    figure, panels = plt.subplots(rows, columns, squeeze=False,
                                  figsize=(4.6 * columns, 3.9 * rows), constrained_layout=True)
    for panel in list(panels.flat)[len(spectra):]:
        panel.axis("off")
    for panel, (group, lines) in zip(panels.flat, spectra.items(), strict=False):
        for index, (beta, spectrum) in enumerate(sorted(lines.items(), key=str)):
            shown = np.log(np.clip(spectrum, 1e-300, None))
            panel.plot(range(1, len(shown) + 1), shown, marker="o", color=f"C{index}",
                       label=f"beta={beta}")
        panel.set(title=_label(group), xlabel="index i",
                  ylabel="ln(sigma_i / sigma_1), class-mean covariance")
        panel.title.set_fontsize(9)
        panel.grid(alpha=0.3)
        panel.legend(fontsize=8)
    figure.suptitle("Singular values of the class-mean covariance (flat at 0: no "
                    "dimensional collapse; mean over seeds)")
    ticks_on_every_panel(figure)
    return figure


PSI_TITLES = {"infonce_sum": "InfoNCE, sum form (Fig. 5)", "triplet": "triplet (Fig. 6)",
              "infonce_mean": "InfoNCE, mean form"}


def _ucl_bound_vs_classes(data: FigureData):
    import matplotlib.pyplot as plt

    if not {"num_classes", "k"} <= set(data.axes):
        return None
    summary = [entry for entry in data.summary
               if entry["metric"] in ("theory_ucl_bound", "train_loss")]
    forms = sorted({entry.get("psi", "infonce_mean") for entry in summary}, key=str)
    if not summary:
        return None
    figure, panels = plt.subplots(1, len(forms), squeeze=False, figsize=(5.6 * len(forms), 4.4),
                                  constrained_layout=True)
    for panel, form in zip(panels[0], forms, strict=True):
        chosen = [entry for entry in summary if entry.get("psi", "infonce_mean") == form]
        for index, k in enumerate(sorted({entry["k"] for entry in chosen})):
            for metric, style in (("theory_ucl_bound", "--"), ("train_loss", "o")):
                points = sorted((entry["num_classes"], entry["mean"], entry["ci_low"],
                                 entry["ci_high"]) for entry in chosen
                                if entry["metric"] == metric and entry["k"] == k)
                if not points:
                    continue
                classes, means, lows, highs = zip(*points, strict=True)
                if metric == "theory_ucl_bound":
                    panel.plot(classes, means, style, color=f"C{index}",
                               label=f"Theorem 3, k = {k}")
                else:
                    panel.errorbar(classes, means, yerr=interval_errors(means, lows, highs),
                                   fmt=style, color=f"C{index}", markersize=4, capsize=3,
                                   label=f"reached, k = {k}")
        panel.set(title=f"UCL lower bound, {PSI_TITLES.get(form, form)}",
                  xlabel="number of classes C", ylabel="UCL loss")
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7, ncols=2)
    figure.suptitle("Theorem 3's bound (dashed) and the loss UCL training reached (points, "
                    f"{seeds_note(summary)})")
    ticks_on_every_panel(figure)
    return figure


FIGURES.register("nc_curves", FigureSpec(_nc_curves, cell_files=(CURVES,)))
FIGURES.register("representations", FigureSpec(
    _representations, cell_files=(CellFile(REPRESENTATION, ("z", "labels")),)))
FIGURES.register("class_mean_spectra", FigureSpec(
    _class_mean_spectra, cell_files=(CellFile(REPRESENTATION, ("spectrum",)),)))
FIGURES.register("ucl_bound_vs_classes", FigureSpec(_ucl_bound_vs_classes))
