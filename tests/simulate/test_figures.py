"""Simulation figures: coinciding sphere labels, and history / phase plots that stay legible
with several runs and with a single step or a single N."""

import numpy as np
import pytest

from contrastkit.simulate import figures
from contrastkit.simulate.figures import _coinciding


def test_coinciding_points_share_one_label_and_distinct_points_keep_their_own():
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    u = np.stack([e1, e2, e1 + 1e-3])
    v = np.stack([e1, -e2, e2])
    groups = {tuple(names) for _, names in _coinciding(u, v)}
    assert groups == {("u1", "v1", "u3"), ("u2", "v3"), ("v2",)}


@pytest.fixture
def drawn(monkeypatch):
    """The figure a plot function would save (kept open for inspection)."""
    saved = {}
    monkeypatch.setattr(figures, "_save", lambda fig, path: saved.setdefault("figure", fig))
    yield saved
    if "figure" in saved:
        figures._pyplot().close(saved["figure"])


def _entry(step: int, value: float) -> dict:
    return {"step": step, "loss": value, "positive_mean": value, "negative_mean": -value,
            "negative_var": value / 10}


def test_history_draws_every_run_in_every_panel_and_a_single_step_as_a_point(drawn, tmp_path):
    histories = {"full batch": [_entry(0, 1.0)], "fixed mini-batches (m = 2)": [_entry(0, 0.5)]}
    figures.plot_history(histories, tmp_path / "history.png")
    axes = [ax for ax in drawn["figure"].axes if ax.get_title()]
    assert len(axes) == len(figures.HISTORY_PANELS)
    for ax in axes:
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == list(histories)
        assert all(line.get_marker() not in (None, "None", "") for line in lines)
        low, high = ax.get_xlim()
        assert low < 0 < high and high - low >= 1
    legend_texts = [t.get_text() for legend in drawn["figure"].legends for t in legend.texts]
    assert legend_texts == list(histories)


def test_phase_map_with_a_single_n_fills_a_cell(drawn, tmp_path):
    ts = [0.5, 1.0, 1.5]
    grid = np.full((3, 1), 0.5)
    figures.plot_sigmoid_phase([5], ts, [("one N", grid)], tmp_path / "phase.png")
    ax = drawn["figure"].axes[0]
    corners = ax.collections[0].get_coordinates()
    assert corners[..., 0].max() - corners[..., 0].min() == pytest.approx(1.0)
    low, high = ax.get_xlim()
    assert low <= 4.5 and high >= 5.5
