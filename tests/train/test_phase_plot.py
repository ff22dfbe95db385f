"""The live phase diagram of a run that learns SigLIP's (t, b): the figure is written, covers the
trajectory and SigLIP's init, marks Theorem 2's thresholds, and its second panel plots the
measured similarities against the theory's."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from contrastkit.theory import phase_point, sigmoid_thresholds  # noqa: E402
from contrastkit.train.phase_plot import (  # noqa: E402
    phase_trajectory_figure,
    plot_phase_trajectory,
)

N = 64
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# the regions' fills, as drawn (antipodal, intermediate, ETF)
FILLS = {"antipodal": (0xF3, 0xC4, 0xBF), "intermediate": (0xE4, 0xE4, 0xE4),
         "etf": (0xC3, 0xD9, 0xEE)}


def crossing_run(steps: int = 40) -> list[dict]:
    """From SigLIP's init (scale 10, bias -10: the ETF for n = 64) down to t = 1, b = -2
    (antipodal: t + b = -1 <= log 31), through the intermediate regime; every 25 steps."""
    points = []
    for index in range(steps):
        f = index / (steps - 1)
        point = phase_point(N, scale=10.0 - 9.0 * f, bias=-10.0 + 12.0 * f,
                            measured_positive=0.2 + 0.6 * f, measured_negative=-0.1 * f)
        point["step"] = 25 * index
        points.append(point)
    return points


def test_the_crossing_run_really_crosses_all_three_regions():
    regimes = [point["siglip_regime"] for point in crossing_run()]
    assert regimes[0] == "etf" and regimes[-1] == "antipodal" and "intermediate" in regimes


def test_a_trajectory_crossing_regions_is_written_as_a_png(tmp_path):
    path = plot_phase_trajectory(crossing_run(), N, tmp_path / "phase.png")
    assert path == tmp_path / "phase.png"
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phase.png"]  # no temporary left
    image = (matplotlib.image.imread(path)[..., :3] * 255).round().astype(int)
    plane = image[:, : image.shape[1] // 2]
    for regime, color in FILLS.items():
        filled = (np.abs(plane - np.array(color)).max(axis=2) <= 2).sum()
        assert filled > 2000, f"the {regime} region is not filled in the left panel"


def test_one_point_is_written_as_a_png(tmp_path):
    # a learned_metrics row (config keys) of one epoch, at SigLIP's init
    point = {"siglip_scale": 10.0, "siglip_bias": -10.0, "epochs_completed": 1}
    path = plot_phase_trajectory([point], 8, tmp_path / "one.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert matplotlib.image.imread(path).shape[0] > 300


def test_an_existing_figure_is_replaced(tmp_path):
    path = tmp_path / "phase.png"
    path.write_bytes(b"old")
    plot_phase_trajectory(crossing_run(5), N, path)
    assert path.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("points", [[], ()])
def test_an_empty_list_is_refused(tmp_path, points):
    with pytest.raises(ValueError, match="non-empty"):
        plot_phase_trajectory(points, N, tmp_path / "phase.png")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("point, message", [
    ({"step": 1, "siglip_regime": "etf"}, "has no \\(t, b\\)"),
    ({"siglip_t": math.nan, "siglip_b": 1.0}, "scale must be finite"),
    ({"siglip_t": -1.0, "siglip_b": 1.0}, "scale must be > 0"),
    ({"siglip_scale": 1.0, "siglip_bias": "x"}, "bias must be a number"),
])
def test_bad_points_are_refused(tmp_path, point, message):
    with pytest.raises(ValueError, match=message):
        plot_phase_trajectory([phase_point(N, 10.0, -10.0), point], N, tmp_path / "phase.png")
    assert not any(tmp_path.iterdir())


def test_a_bad_n_is_refused(tmp_path):
    with pytest.raises(ValueError, match="n must be >= 2"):
        plot_phase_trajectory([phase_point(N, 10.0, -10.0)], 1, tmp_path / "phase.png")


def _line(axes, label_start):
    lines = [line for line in axes.get_lines() if line.get_label().startswith(label_start)]
    assert len(lines) == 1, [line.get_label() for line in axes.get_lines()]
    return lines[0]


def test_the_figure_covers_the_run_marks_the_thresholds_and_names_the_end_regime():
    points = crossing_run()
    figure = phase_trajectory_figure(points, N)
    try:
        plane, similarity = figure.axes[:2]
        t = [point["siglip_t"] for point in points]
        b = [point["siglip_b"] for point in points]
        (t_low, t_high), (b_low, b_high) = plane.get_xlim(), plane.get_ylim()
        assert t_low <= 0.0 and t_high > max(*t, 10.0) and b_low < min(*b, 0.0)
        assert b_high > max(*b, 10.0)
        thresholds = sigmoid_thresholds(N)
        antipodal = _line(plane, "antipodal iff")
        etf = _line(plane, "ETF iff")
        assert list(antipodal.get_xdata()) == list(antipodal.get_ydata()) == [
            thresholds.antipodal]
        assert list(etf.get_xdata()) == list(etf.get_ydata()) == [thresholds.etf]
        assert thresholds.antipodal == pytest.approx(0.5 * math.log((N - 2) / 2), abs=1e-12)
        assert thresholds.etf == pytest.approx((N - 1) / N * math.log(N - 3), abs=1e-12)
        diagonal = _line(plane, "t = b")
        assert list(diagonal.get_xdata()) == list(diagonal.get_ydata())
        start, end = _line(plane, "start"), _line(plane, "end")
        assert (start.get_xdata()[0], start.get_ydata()[0]) == (t[0], b[0])
        assert (end.get_xdata()[0], end.get_ydata()[0]) == (t[-1], b[-1])
        init = _line(plane, "SigLIP init")
        assert (init.get_xdata()[0], init.get_ydata()[0]) == (10.0, 10.0)
        title = figure._suptitle.get_text()
        assert "antipodal regime" in title and f"n = {N}" in title
        assert plane.get_xlabel().startswith("t = scale") and "bias" in plane.get_ylabel()
    finally:
        plt.close(figure)


def test_the_second_panel_is_measured_against_predicted_over_steps():
    points = crossing_run()
    figure = phase_trajectory_figure(points, N)
    try:
        similarity = figure.axes[1]
        lines = {line.get_label(): line for line in similarity.get_lines()}
        steps = [point["step"] for point in points]
        assert similarity.get_xlabel() == "step"
        for key, name in (("pos", "positive  $u_i \\cdot v_i$"),
                          ("neg", "negative  $u_i \\cdot v_j$")):
            theory, measured = lines[f"{name}: optimum (theory)"], lines[f"{name}: measured"]
            assert list(theory.get_xdata()) == list(measured.get_xdata()) == steps
            assert list(theory.get_ydata()) == [p[f"siglip_predicted_{key}"] for p in points]
            assert list(measured.get_ydata()) == [p[f"siglip_measured_{key}"] for p in points]
        assert list(lines["positive  $u_i \\cdot v_i$: optimum (theory)"].get_ydata())[0] == 1.0
        assert list(lines["negative  $u_i \\cdot v_j$: optimum (theory)"].get_ydata())[-1] == -1.0
        etf_negative = _line(similarity, "ETF negative")
        assert list(etf_negative.get_ydata()) == [-1 / (N - 1)] * 2
    finally:
        plt.close(figure)


def _label_first(axes, label_start):
    return next(line for line in axes.get_lines() if line.get_label().startswith(label_start))


def test_epochs_are_the_x_axis_without_steps_and_theory_comes_from_n():
    # learned_metrics rows: config keys, epochs, no measured values, a prediction for another n
    rows = [{"siglip_scale": 10.0 + e, "siglip_bias": -10.0 + 0.5 * e, "epochs_completed": e,
             "siglip_predicted_pos": 123.0} for e in (1, 2, 3)]
    figure = phase_trajectory_figure(rows, 16)
    try:
        similarity = figure.axes[1]
        assert similarity.get_xlabel() == "epoch"
        theory = _label_first(similarity, "positive")
        assert list(theory.get_xdata()) == [1, 2, 3]
        expected = [phase_point(16, row["siglip_scale"], row["siglip_bias"])[
            "siglip_predicted_pos"] for row in rows]
        assert list(theory.get_ydata()) == expected
        assert not any("measured" in line.get_label() for line in similarity.get_lines())
    finally:
        plt.close(figure)


def test_steps_win_only_when_every_point_has_one():
    points = crossing_run(4)
    for index, point in enumerate(points):
        point["epochs_completed"] = index + 1
    del points[2]["step"]
    figure = phase_trajectory_figure(points, N)
    try:
        assert figure.axes[1].get_xlabel() == "epoch"
        assert list(_label_first(figure.axes[1], "positive").get_xdata()) == [1, 2, 3, 4]
    finally:
        plt.close(figure)
