"""The phase diagram of the sigmoid (SigLIP) loss, live: the learned ``(t, b)`` of a run drawn over
the regions where the optimum of a batch is the simplex ETF, an intermediate double-constant
embedding or the antipodal structure (Lee, Chang & Sohn, "Analysis of Using Sigmoid Loss for
Contrastive Learning", AISTATS 2024, arXiv:2402.12613), beside the measured positive and
negative similarities against the ones the theory predicts."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from numbers import Real
from pathlib import Path

import numpy as np

from contrastkit.files import run_folder_io
from contrastkit.theory import PHASE_REGIMES, phase_point, phase_regions, sigmoid_thresholds

#: SigLIP's initialization (Zhai et al. 2023): ``scale = 10, bias = -10``, i.e. ``t = b = 10``.
SIGLIP_INIT = (10.0, 10.0)
_GRID = 240  # cells per axis of the regions' image
_REGION_COLORS = {"antipodal": "#f3c4bf", "intermediate": "#e4e4e4", "etf": "#c3d9ee"}
_REGION_LABELS = {"antipodal": "antipodal\n$u_i = -v_j$",
                  "intermediate": "intermediate CCEM\n$0 < \\delta^* < \\infty$",
                  "etf": "simplex ETF\n$u_i = v_i$"}
_REGIME_NAMES = {"etf": "simplex ETF", "intermediate": "intermediate", "antipodal": "antipodal"}
_X_KEYS = (("step", "step"), ("epochs_completed", "epoch"))
_LEGEND_BELOW = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.1), "fontsize": 8}


def plot_phase_trajectory(points: Sequence[dict], n: int, path: Path) -> Path:
    """Write :func:`phase_trajectory_figure` to ``path`` as a PNG (matplotlib's Agg backend),
    through a temporary file, so a failed write leaves no partial figure; errors writing are
    :class:`~contrastkit.files.RunFolderError`. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    figure = phase_trajectory_figure(points, n)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with run_folder_io("write", path):
            try:
                figure.savefig(temporary, format="png", dpi=100)
                os.replace(temporary, path)
            finally:
                temporary.unlink(missing_ok=True)
    finally:
        plt.close(figure)
    return path


def phase_trajectory_figure(points: Sequence[dict], n: int):
    """Two panels over the records ``points`` of a run that learns SigLIP's scale and bias.

    Each point needs ``siglip_t`` and ``siglip_b`` (a :func:`~contrastkit.theory.phase_point`
    record) or else ``siglip_scale`` and ``siglip_bias`` (the config keys of
    :func:`~contrastkit.train.objective.learned_metrics`); it may carry
    ``siglip_measured_pos`` / ``siglip_measured_neg``, and ``step`` (used when every point has
    it) or else ``epochs_completed`` as its place in training (else its index in the list).
    The theory (regime, predicted similarities) is recomputed from ``n`` and each ``(t, b)``,
    so the figure is that of a batch of ``n`` pairs throughout.

    - Left: the ``(t, b)`` plane (``t = scale``, ``b = -bias``) filled by the regime of the
      optimum of ``n`` pairs on ``d >= n`` (:func:`~contrastkit.theory.phase_regions`), each
      region labelled; the line ``t = b`` with Theorem 2's thresholds on it
      (:func:`~contrastkit.theory.sigmoid_thresholds`); SigLIP's init ``t = b = 10``; and the
      run's trajectory, coloured by progress, with its start and end marked. The axes cover
      the trajectory, the init and both thresholds, with a margin.
    - Right: the measured positive and negative similarities against the predicted optimum's
      (``u_i . v_i`` and ``u_i . v_j``) over training, on a background coloured by the regime
      at each point.

    The title names the regime where the run ended. Raises ``ValueError`` for an empty
    ``points``, a point without ``(t, b)``, or values :func:`phase_point` rejects.
    """
    import matplotlib.pyplot as plt

    run = _Run(points, n)
    figure, (plane, similarity) = plt.subplots(
        1, 2, figsize=(14, 7), gridspec_kw={"width_ratios": [1.2, 1]})
    # fixed margins: a layout engine doubles the time of drawing the figure; the legends go
    # below the panels, where they hide neither the regions' labels nor the curves
    figure.subplots_adjust(left=0.06, right=0.985, bottom=0.25, top=0.89, wspace=0.3)
    _draw_plane(plane, run, figure)
    _draw_similarities(similarity, run)
    end = run.records[-1]
    figure.suptitle(
        f"SigLIP's learned (t, b) on the sigmoid loss's phase diagram, batch of n = {n} pairs: "
        f"the run ended in the {_REGIME_NAMES[end['siglip_regime']]} regime "
        f"(t = {end['siglip_t']:.4g}, b = {end['siglip_b']:.4g})", fontsize=11.5)
    return figure



class _Run:
    """The points of a run as arrays: progress ``x``, ``(t, b)``, the theory's records."""

    def __init__(self, points: Sequence[dict], n: int):
        if isinstance(points, dict) or not isinstance(points, Sequence) or len(points) == 0:
            raise ValueError("points must be a non-empty list of records (dicts with siglip_t "
                             f"and siglip_b), got {points!r}")
        self.n = n
        self.records = [self._record(index, point) for index, point in enumerate(points)]
        self.t = np.array([record["siglip_t"] for record in self.records])
        self.b = np.array([record["siglip_b"] for record in self.records])
        self.x, self.x_label = self._progress(points)
        self.regimes = [record["siglip_regime"] for record in self.records]

    def _record(self, index: int, point: dict) -> dict:
        if not isinstance(point, dict):
            raise ValueError(f"points[{index}] must be a dict, got {point!r}")
        if "siglip_t" in point and "siglip_b" in point:
            scale, bias = point["siglip_t"], _negated(point["siglip_b"])
        elif "siglip_scale" in point and "siglip_bias" in point:
            scale, bias = point["siglip_scale"], point["siglip_bias"]
        else:
            raise ValueError(f"points[{index}] has no (t, b): it needs siglip_t and siglip_b "
                             f"(or siglip_scale and siglip_bias), got keys {sorted(point)}")
        measured = [point.get(f"siglip_measured_{key}") for key in ("pos", "neg")]
        try:
            return phase_point(self.n, scale, bias,
                               *(math.nan if value is None else value for value in measured))
        except ValueError as error:
            raise ValueError(f"points[{index}]: {error}") from error

    @staticmethod
    def _progress(points: Sequence[dict]) -> tuple[np.ndarray, str]:
        for key, label in _X_KEYS:
            if all(key in point for point in points):
                try:
                    return np.array([point[key] for point in points], dtype=float), label
                except (TypeError, ValueError) as error:
                    raise ValueError(f"every point's {key} must be a number") from error
        return np.arange(len(points), dtype=float), "record (in order)"


def _negated(value):
    """``-value`` for a number, the value as is otherwise (for :func:`phase_point` to reject)."""
    return -value if isinstance(value, Real) and not isinstance(value, bool) else value


def _axis_range(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    margin = 0.08 * max(high - low, 1.0)
    return low - margin, high + margin


def _draw_plane(axes, run: _Run, figure) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.colors import ListedColormap, Normalize
    from matplotlib.patches import Patch
    from scipy.ndimage import distance_transform_edt

    n = run.n
    thresholds = sigmoid_thresholds(n)
    marks = [thresholds.antipodal, thresholds.etf]
    _, t_high = _axis_range([0.0, *run.t, SIGLIP_INIT[0], *marks])
    b_low, b_high = _axis_range([0.0, *run.b, SIGLIP_INIT[1], *marks])
    t_low = 0.0  # t = scale > 0: the plane starts at t = 0
    t_step, b_step = (t_high - t_low) / _GRID, (b_high - b_low) / _GRID
    t_cells = t_low + (np.arange(_GRID) + 0.5) * t_step
    b_cells = b_low + (np.arange(_GRID) + 0.5) * b_step
    codes = phase_regions(n, t_cells, b_cells)
    colors = ListedColormap([_REGION_COLORS[regime] for regime in PHASE_REGIMES])
    axes.imshow(codes, origin="lower", extent=(t_low, t_high, b_low, b_high), aspect="auto",
                cmap=colors, vmin=-0.5, vmax=len(PHASE_REGIMES) - 0.5, interpolation="nearest")
    for code, regime in enumerate(PHASE_REGIMES):  # each label where its region is widest
        inside = np.pad(codes == code, 1)
        depth = distance_transform_edt(inside)[1:-1, 1:-1]
        if depth.max() >= 10:  # cells: room for the label's box
            row, column = np.unravel_index(np.argmax(depth), depth.shape)
            axes.text(t_cells[column], b_cells[row], _REGION_LABELS[regime], ha="center",
                      va="center", fontsize=9.5, color="0.2",
                      bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.6,
                            "edgecolor": "none"})

    low, high = max(t_low, b_low), min(t_high, b_high)
    handles = [Patch(facecolor=_REGION_COLORS[regime], edgecolor="0.6",
                     label=f"optimum: {_REGIME_NAMES[regime]}") for regime in PHASE_REGIMES]
    handles += axes.plot([low, high], [low, high], ls="--", lw=1, color="0.25",
                         label="t = b (Theorem 2)")
    if thresholds.etf > 0:
        handles += axes.plot(thresholds.antipodal, thresholds.antipodal, "v", ms=8,
                             color="#b2182b", markeredgecolor="k", ls="none",
                             label=f"antipodal iff t \u2264 \u00bd log((n\u22122)/2) = "
                                   f"{thresholds.antipodal:.3g}")
        handles += axes.plot(thresholds.etf, thresholds.etf, "^", ms=8, color="#2166ac",
                             markeredgecolor="k", ls="none",
                             label=f"ETF iff t \u2265 ((n\u22121)/n) log(n\u22123) = "
                                   f"{thresholds.etf:.3g}")
    handles += axes.plot(*SIGLIP_INIT, "X", ms=9, color="0.45", markeredgecolor="k",
                         ls="none", label="SigLIP init (t = b = 10)")

    progress = Normalize(vmin=run.x.min(), vmax=run.x.max())
    cmap = ListedColormap(_viridis()(np.linspace(0.0, 0.85, 256)))
    if len(run.t) > 1:
        segments = np.stack([np.column_stack([run.t[:-1], run.b[:-1]]),
                             np.column_stack([run.t[1:], run.b[1:]])], axis=1)
        # an array (segments, 2, 2) as matplotlib documents; its stubs ask for a Sequence
        line = LineCollection(segments,  # type: ignore[arg-type]
                              cmap=cmap, norm=progress, linewidths=2.2)
        line.set_array((run.x[:-1] + run.x[1:]) / 2)
        axes.add_collection(line)
        bar = figure.colorbar(line, ax=axes, pad=0.015, fraction=0.05)
        bar.set_label(f"training progress ({run.x_label})")
    axes.scatter(run.t, run.b, c=run.x, cmap=cmap, norm=progress, s=10, zorder=3)
    handles += axes.plot(run.t[0], run.b[0], "o", ms=9, markerfacecolor="white",
                         markeredgecolor="k", ls="none", zorder=4,
                         label=f"start ({run.x_label} {run.x[0]:g})")
    handles += axes.plot(run.t[-1], run.b[-1], "*", ms=16, color=cmap(progress(run.x[-1])),
                         markeredgecolor="k", ls="none", zorder=5,
                         label=f"end ({run.x_label} {run.x[-1]:g})")
    axes.set(xlim=(t_low, t_high), ylim=(b_low, b_high),
             xlabel="t = scale  (SigLIP logit = t cos \u2212 b)", ylabel="b = \u2212bias",
             title=f"optimum of a batch of n = {n} pairs (exact for d \u2265 n)")
    axes.legend(handles=handles, **_LEGEND_BELOW, ncol=3)


def _viridis():
    import matplotlib

    return matplotlib.colormaps["viridis"]


def _draw_similarities(axes, run: _Run) -> None:
    from matplotlib.ticker import MaxNLocator

    x = run.x
    style = {"marker": "o", "markersize": 4 if len(x) < 30 else 0}
    for start, stop, regime in _regime_spans(x, run.regimes):
        axes.axvspan(start, stop, color=_REGION_COLORS[regime], lw=0, zorder=0)
    for key, name, color in (("pos", "positive  $u_i \\cdot v_i$", "C0"),
                             ("neg", "negative  $u_i \\cdot v_j$", "C3")):
        predicted = [record[f"siglip_predicted_{key}"] for record in run.records]
        measured = [record[f"siglip_measured_{key}"] for record in run.records]
        axes.plot(x, predicted, ls="--", color=color, label=f"{name}: optimum (theory)",
                  **style)
        if not all(math.isnan(value) for value in measured):
            axes.plot(x, measured, ls="-", color=color, label=f"{name}: measured", **style)
    axes.axhline(-1.0 / (run.n - 1), ls=":", lw=1, color="0.3",
                 label=f"ETF negative \u22121/(n\u22121) = {-1.0 / (run.n - 1):.3g}")
    if len(x) == 1 or x.min() == x.max():
        axes.set_xlim(x[0] - 1.0, x[0] + 1.0)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    axes.set(ylim=(-1.08, 1.08), xlabel=run.x_label, ylabel="cosine similarity",
             title="similarities over training, shaded by the optimum's regime")
    axes.legend(**_LEGEND_BELOW, ncol=2)


def _regime_spans(x: np.ndarray, regimes: list[str]) -> list[tuple[float, float, str]]:
    """Stretches of the x axis with one regime, split halfway between points."""
    if len(x) < 2:
        return []
    edges = [x[0], *((x[:-1] + x[1:]) / 2), x[-1]]
    spans: list[tuple[float, float, str]] = []
    for index, regime in enumerate(regimes):
        if spans and spans[-1][2] == regime:
            spans[-1] = (spans[-1][0], edges[index + 1], regime)
        else:
            spans.append((edges[index], edges[index + 1], regime))
    return spans
