"""Figures of simulated embeddings (matplotlib, imported on use; the ``train`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
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
    """One 3-D unit-sphere panel per ``(title, u, v)`` (the central paper's Fig. 2): ``u_i`` as
    circles and ``v_i`` as triangles, pair ``i`` in color ``i``. Embeddings need ``d = 3``."""
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
    return _save(fig, path)


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


def plot_history(history: Sequence[dict[str, float]], path: str | Path) -> Path:
    """Loss and similarity statistics against the optimization step."""
    plt = _pyplot()
    steps = [entry["step"] for entry in history]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(steps, [entry["loss"] for entry in history])
    axes[0].set_title("loss")
    for key in ("positive_mean", "negative_mean", "within_mean"):
        axes[1].plot(steps, [entry[key] for entry in history], label=key)
    axes[1].legend(fontsize=8)
    axes[1].set_title("mean similarity")
    axes[2].semilogy(steps, [max(entry["negative_var"], 1e-18) for entry in history])
    axes[2].set_title("variance of negative similarities")
    for ax in axes:
        ax.set_xlabel("step")
    fig.tight_layout()
    return _save(fig, path)


def plot_sigmoid_phase(
    ns: Sequence[int],
    ts: Sequence[float],
    panels: Sequence[tuple[str, np.ndarray]],
    path: str | Path,
) -> Path:
    """The sigmoid paper's Fig. 2: normalized positive similarity ``s`` over ``(N, t = b)``, one
    heat map per ``(title, grid)`` (grid shape ``(len(ts), len(ns))``), with Theorem 2's
    thresholds: blue (ETF above) and red (antipodal below)."""
    from contrastkit.theory import sigmoid_thresholds

    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    fine_n = np.arange(min(ns), max(ns) + 1)
    etf = [sigmoid_thresholds(int(n)).etf for n in fine_n]
    anti = [sigmoid_thresholds(int(n)).antipodal for n in fine_n]
    for ax, (title, grid) in zip(axes[0], panels, strict=True):
        image = ax.pcolormesh(ns, ts, grid, vmin=0, vmax=1, cmap="viridis", shading="nearest")
        ax.plot(fine_n, etf, "--", color="tab:blue", label="ETF threshold (N-1)/N log(N-3)")
        ax.plot(fine_n, anti, "--", color="tab:red", label="antipodal threshold log((N-2)/2)/2")
        ax.set_ylim(min(ts), max(ts))
        ax.set_xlabel("N")
        ax.set_ylabel("t = b")
        ax.set_title(title, fontsize=10)
        fig.colorbar(image, ax=ax, label="s = (1 + mean u_i.v_i) / 2")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
