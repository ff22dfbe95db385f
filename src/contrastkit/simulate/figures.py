"""Figures of simulated embeddings (matplotlib, imported on use; the ``train`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sphere_panels(
    panels: Sequence[tuple[str, np.ndarray, np.ndarray]], path: str | Path
) -> Path:
    """:func:`sphere_panels_figure` saved to ``path``."""
    return _save(sphere_panels_figure(panels), path)


def sphere_panels_figure(panels: Sequence[tuple[str, np.ndarray, np.ndarray]]):
    """One 3-D unit-sphere panel per ``(title, u, v)`` (the central paper's Fig. 2, the sigmoid
    paper's Fig. 1): ``u_i`` as circles and ``v_i`` as triangles, pair ``i`` in color ``i``.
    Embeddings need ``d = 3``. Returns the matplotlib figure."""
    plt = _pyplot()
    fig = plt.figure(figsize=(4.0 * len(panels), 4.6))
    grid_u, grid_v = np.mgrid[0 : 2 * np.pi : 40j, 0 : np.pi : 20j]
    colors = plt.get_cmap("tab10")
    for index, (title, u, v) in enumerate(panels, start=1):
        ax = fig.add_subplot(1, len(panels), index, projection="3d")
        ax.plot_wireframe(np.cos(grid_u) * np.sin(grid_v), np.sin(grid_u) * np.sin(grid_v),
                          np.cos(grid_v), color="0.85", linewidth=0.4)
        for i, (a, b) in enumerate(zip(np.asarray(u), np.asarray(v), strict=True)):
            color = colors(i % 10)
            ax.scatter(*a, color=color, s=70, marker="o", depthshade=False)
            ax.scatter(*b, color=color, s=70, marker="^", depthshade=False)
        # at an optimum many points coincide (u_i = v_i, equal pairs across batches): one
        # label per location, listing every point there, instead of labels printed on each other
        for point, names in _coinciding(u, v):
            ax.text(*(1.1 * point + [0.0, 0.0, 0.14]), " = ".join(names), fontsize=8,
                    ha="center")
        ax.set_title(title, fontsize=9)
        for set_lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
            set_lim(-1, 1)
        ax.set_box_aspect((1, 1, 1), zoom=1.25)
        ax.view_init(elev=18, azim=35)
        ax.set_axis_off()
    fig.subplots_adjust(left=0, right=1, bottom=0, top=0.88, wspace=0)
    return fig


def _coinciding(u, v, tolerance: float = 0.05) -> list[tuple[np.ndarray, list[str]]]:
    """The distinct locations among ``u_i`` and ``v_i`` (points closer than ``tolerance`` are
    one location), each with the names of the points there (``u1``, ``v1``, ...)."""
    groups: list[tuple[np.ndarray, list[str]]] = []
    named = [(f"u{i + 1}", a) for i, a in enumerate(np.asarray(u))]
    named += [(f"v{i + 1}", b) for i, b in enumerate(np.asarray(v))]
    for name, point in sorted(named, key=lambda item: (int(item[0][1:]), item[0][0])):
        for location, names in groups:
            if np.linalg.norm(location - point) < tolerance:
                names.append(name)
                break
        else:
            groups.append((point, [name]))
    return groups


#: The panels of :func:`plot_history`: (title, history key, log scale).
HISTORY_PANELS = (
    ("loss", "loss", False),
    ("mean positive similarity", "positive_mean", False),
    ("mean negative similarity", "negative_mean", False),
    ("variance of negative similarities", "negative_var", True),
)
#: Below this many recorded steps each one is drawn as a marker, so a run of one step shows.
MARKER_LIMIT = 30


def plot_history(histories: Mapping[str, Sequence[dict[str, float]]], path: str | Path) -> Path:
    """The loss and the similarity statistics against the optimization step: one panel per
    statistic, one line per run of ``histories`` (``{run name: history}``), in the same
    color in every panel, with the run names in one legend below the panels."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(HISTORY_PANELS), figsize=(15, 3.9))
    colors = plt.get_cmap("tab10")
    for index, (name, history) in enumerate(histories.items()):
        steps = [entry["step"] for entry in history]
        style = dict(color=colors(index % 10), label=name,
                     marker="o" if len(steps) < MARKER_LIMIT else None, markersize=4)
        for ax, (_, key, log) in zip(axes, HISTORY_PANELS, strict=True):
            values = [entry[key] for entry in history]
            if log:  # an exact zero variance (the simplex ETF) has no logarithm
                ax.semilogy(steps, [max(value, 1e-18) for value in values], **style)
            else:
                ax.plot(steps, values, **style)
    all_steps = [entry["step"] for history in histories.values() for entry in history]
    low, high = min(all_steps), max(all_steps)
    pad = max(0.03 * (high - low), 0.5)  # a single step stays centred on a readable axis
    for ax, (title, _, _) in zip(axes, HISTORY_PANELS, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlim(low - pad, high + pad)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return _save(fig, path)


def plot_sigmoid_phase(
    ns: Sequence[int] | np.ndarray,
    ts: Sequence[float] | np.ndarray,
    panels: Sequence[tuple[str, np.ndarray]],
    path: str | Path,
) -> Path:
    """:func:`sigmoid_phase_figure` saved to ``path``."""
    return _save(sigmoid_phase_figure(ns, ts, panels), path)


def sigmoid_phase_figure(ns: Sequence[int] | np.ndarray, ts: Sequence[float] | np.ndarray,
                         panels: Sequence[tuple[str, np.ndarray]]):
    """The sigmoid paper's Fig. 2: normalized positive similarity ``s`` over ``(N, t = b)``, one
    heat map per ``(title, grid)`` (grid shape ``(len(ts), len(ns))``; NaN cells are blank),
    with Theorem 2's thresholds: blue (ETF above) and red (antipodal below). Returns the
    matplotlib figure."""
    from contrastkit.theory import sigmoid_thresholds

    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    n_edges, t_edges = _cell_edges(ns, 0.5), _cell_edges(ts, 0.5)
    marker = "o" if len(ns) == 1 else None  # a threshold "curve" over one N is a point
    fine_n = np.arange(min(ns), max(ns) + 1)
    etf = [sigmoid_thresholds(int(n)).etf for n in fine_n]
    anti = [sigmoid_thresholds(int(n)).antipodal for n in fine_n]
    for ax, (title, grid) in zip(axes[0], panels, strict=True):
        image = ax.pcolormesh(n_edges, t_edges, grid, vmin=0, vmax=1, cmap="viridis",
                              shading="flat")
        ax.plot(fine_n, etf, "--", marker=marker, color="tab:blue",
                label="ETF threshold (N-1)/N log(N-3)")
        ax.plot(fine_n, anti, "--", marker=marker, color="tab:red",
                label="antipodal threshold log((N-2)/2)/2")
        ax.set_xlim(n_edges[0], n_edges[-1])
        ax.set_ylim(max(t_edges[0], 0.0), t_edges[-1])  # t = b > 0
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_xlabel("N")
        ax.set_ylabel("t = b")
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, label="s = (1 + mean u_i.v_i) / 2")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def _cell_edges(centers: Sequence[float] | np.ndarray, half_width: float) -> np.ndarray:
    """The boundaries of the cells centred on increasing ``centers``: midpoints between
    neighbours, the outer cells as wide as their neighbour (``2 * half_width`` for one cell)."""
    at = np.asarray(centers, dtype=float)
    if len(at) == 1:
        return np.array([at[0] - half_width, at[0] + half_width])
    middle = (at[:-1] + at[1:]) / 2
    return np.concatenate([[2 * at[0] - middle[0]], middle, [2 * at[-1] - middle[-1]]])


def _save(fig, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
