"""The training curves stay legible for a run of one epoch: every value is a visible marker."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from contrastkit.train.plots import curves_figure, plot_curves  # noqa: E402

PARTS = ["loss", "simclr", "vrns"]


def one_epoch() -> list[dict]:
    return [{"epochs_completed": 1, "lr": 0.075, "loss": 5.2, "simclr": 5.1, "vrns": 0.003,
             "pos_sim_mean": 0.8, "neg_sim_mean": 0.01, "neg_sim_var": 0.02,
             "images_per_s": 500.0, "epoch_seconds": 3.0}]


def test_every_panel_of_a_one_epoch_run_shows_colored_points(tmp_path):
    path = plot_curves(one_epoch(), PARTS, tmp_path / "curves.png")
    image = matplotlib.image.imread(path)[..., :3]
    colored = (image.max(axis=2) - image.min(axis=2)) > 0.3  # axes, text and grid are gray
    third = image.shape[1] // 3
    for panel in range(3):
        assert colored[:, panel * third:(panel + 1) * third].sum() > 20, f"panel {panel} is blank"


def test_one_epoch_lines_are_markers_on_whole_epoch_ticks():
    figure = curves_figure(one_epoch(), PARTS)
    try:
        lines = [line for axes in figure.axes for line in axes.get_lines()]
        assert len(lines) == len(PARTS) + 3  # the parts, the lr, the similarity mean and variance
        for line in lines:
            assert line.get_marker() not in (None, "", " ", "None") and line.get_markersize() > 0
            assert list(line.get_xdata()) == [1]
        for axes in figure.axes:
            assert all(float(tick).is_integer() for tick in axes.get_xticks())
    finally:
        plt.close(figure)
