"""The ``theory`` and ``simulate`` commands: output, files and errors (small runs)."""

import json

import pytest

from contrastkit import losses
from contrastkit.cli import main
from contrastkit.simulate import optimize_embeddings


def test_theory_sigmoid(capsys):
    assert main(["theory", "sigmoid", "--n", "8", "--t", "1", "--b", "1"]) == 0
    out = capsys.readouterr().out
    assert "in between" in out and "0.518736237" in out  # spec seed-003 §2.11 row (8, 1, 1)


def test_theory_minibatch_and_hardneg(capsys):
    assert main(["theory", "minibatch", "--n", "4", "--m", "2"]) == 0
    out = capsys.readouterr().out
    assert "0.222222" in out and "0.888889" in out  # Fig. 2: 2/9 and 8/9
    assert main(["theory", "hardneg", "--classes", "3", "--k", "256"]) == 0
    assert "0.2014133" in capsys.readouterr().out


def test_theory_bad_input_is_an_error_naming_the_argument(capsys):
    assert main(["theory", "sigmoid", "--n", "8", "--t", "0", "--b", "1"]) == 2
    assert "t must be" in capsys.readouterr().err


def test_simulate_writes_metrics_and_figures(tmp_path, capsys):
    out = tmp_path / "sim"
    args = ["simulate", "--loss", "simclr", "--n", "4", "--m", "2", "--d", "3", "--steps", "60",
            "--plot", "--out", str(out)]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"full batch", "fixed mini-batches (m = 2)"}
    assert (out / "sphere.png").stat().st_size > 0 and (out / "history.png").exists()
    assert "var in [0.222222, 0.888889]" in capsys.readouterr().out


def test_simulate_fixed_batch_must_divide(tmp_path, capsys):
    args = ["simulate", "--n", "6", "--m", "4", "--steps", "5", "--out", str(tmp_path / "s")]
    assert main(args) == 2
    assert "--m must divide n = 6" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()  # refused before the full-batch run


def test_simulate_on_the_one_dimensional_sphere_is_refused(tmp_path, capsys):
    """On the sphere of R^1 (the points -1 and +1) nothing moves: no "optimum" is printed beside
    the theory's (issue 39)."""
    out = tmp_path / "sim"
    assert main(["simulate", "--n", "2", "--d", "1", "--steps", "5", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--d must be >= 2" in captured.err and "cannot move" in captured.err
    assert not out.exists()
    with pytest.raises(ValueError, match=r"^d must be >= 2: .* cannot move"):
        optimize_embeddings(losses.simclr, 2, 1, steps=1)


def test_the_theory_line_says_when_the_simplex_does_not_fit(tmp_path, capsys):
    assert main(["simulate", "--n", "5", "--d", "2", "--steps", "5",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "assumes d >= n - 1 = 4" in out and "-1/(n-1)" not in out


def test_sigmoid_phase_small_grid(tmp_path):
    out = tmp_path / "phase"
    args = ["simulate", "sigmoid-phase", "--n-min", "5", "--n-max", "6", "--t-count", "2",
            "--steps", "30", "--plot", "--out", str(out)]
    assert main(args) == 0
    record = json.loads((out / "phase.json").read_text())
    assert len(record["s_simulated"]) == 2 and len(record["s_simulated"][0]) == 2
    assert (out / "phase.png").stat().st_size > 0


@pytest.mark.parametrize("flag", [["--n-min", "2"], ["--t-min", "0"]])
def test_sigmoid_phase_bad_grid(tmp_path, flag):
    assert main(["simulate", "sigmoid-phase", *flag, "--out", str(tmp_path)]) == 2


def test_simulate_siglip_prints_the_sigmoid_optimum(tmp_path, capsys):
    args = ["simulate", "--loss", "siglip", "--scale", "5", "--bias", "-1", "--n", "6", "--d",
            "6", "--steps", "300", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "pos 0.606187" in out and "excessive separation" in out  # theory.sigmoid_optimum
    assert "0.606187" in out.split("full batch")[1].split("\n")[0]  # ... and the simulation


def test_simulate_help_shows_the_experiment_as_optional(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "[EXPERIMENT]" in usage and " EXPERIMENT " not in usage.replace("[EXPERIMENT]", "")


def test_a_new_call_removes_the_figures_of_an_earlier_one_and_nothing_else(tmp_path):
    out = tmp_path / "sim"
    base = ["simulate", "--n", "4", "--m", "2", "--steps", "3", "--out", str(out)]
    assert main([*base, "--plot"]) == 0
    assert (out / "sphere.png").exists() and (out / "history.png").exists()
    (out / "notes.txt").write_text("the user's own file")
    assert main([*base, "--d", "4", "--plot"]) == 0  # no sphere figure in d = 4
    assert sorted(p.name for p in out.iterdir()) == ["history.png", "metrics.json", "notes.txt"]
    assert main(base) == 0  # no figures at all
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "notes.txt"]


def test_sigmoid_phase_removes_its_earlier_figure(tmp_path):
    args = ["simulate", "sigmoid-phase", "--n-min", "5", "--n-max", "5", "--t-count", "2",
            "--steps", "2", "--out", str(tmp_path)]
    assert main([*args, "--plot"]) == 0 and (tmp_path / "phase.png").exists()
    assert main(args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phase.json"]
