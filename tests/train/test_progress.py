"""What training shows while it runs: one plain line per epoch when standard error is not a
terminal, a rich bar when it is, nothing with ``progress=false``."""

import io

from contrastkit.train import pretrain
from contrastkit.train.progress import epoch_progress, format_epoch, stage_progress

from .tiny import tiny_config


def test_one_flushed_line_per_epoch_when_not_a_terminal(tmp_path, capsys):
    history = pretrain(tiny_config(tmp_path, epochs=2, progress=True)).history
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == len(history) == 2
    for line, metrics in zip(lines, history, strict=True):
        done, loss = metrics["epochs_completed"], metrics["loss"]
        assert line.startswith(f"epoch {done}/2: loss {loss:.4f} (")
        for shown in (f"simclr {metrics['simclr']:.4f}", f"vrns {metrics['vrns']:.4f}",
                      f"lr {metrics['lr']:.4g}", f"neg-sim mean {metrics['neg_sim_mean']:.4f}",
                      f"var {metrics['neg_sim_var']:.4f}",
                      f"{metrics['images_per_s']:.0f} img/s"):
            assert shown in line
    assert captured.out == ""  # standard output is left to the command's results


def test_progress_false_shows_nothing(tmp_path, capsys):
    pretrain(tiny_config(tmp_path, epochs=1, progress=False))
    assert capsys.readouterr() == ("", "")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_the_bar_and_each_epoch_line(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    metrics = {"epochs_completed": 1, "lr": 0.1, "loss": 5.0, "pos_sim_mean": 0.9,
               "neg_sim_mean": 0.01, "neg_sim_var": 0.02, "images_per_s": 1234.0,
               "epoch_seconds": 1.5}
    with epoch_progress(True, 3) as show:
        show(0, 1, 2, 5.5, 1000.0)
        show(0, 2, 2, 5.0, 1234.0)
        show.epoch_done(metrics)
    shown = terminal.getvalue()
    assert "\x1b[" in shown  # drawn with terminal control sequences: the live bar
    assert format_epoch(metrics, 3) in shown and "2/2" in shown


def test_evaluation_stages_get_a_bar_each_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with stage_progress(True) as stages:
        with stages.stage("linear probe epochs", 3) as advance:
            for _ in range(3):
                advance(note="training loss 0.5000")
        with stages.stage("kNN", 1) as advance:
            advance()
    shown = terminal.getvalue()
    assert "\x1b[" in shown and "done in" not in shown  # bars, not the plain lines
    assert "linear probe epochs" in shown and "3/3" in shown and "training loss 0.5000" in shown
    assert "kNN" in shown and "1/1" in shown


def test_a_single_loss_is_not_repeated_as_its_own_part():
    metrics = {"epochs_completed": 5, "lr": 0.05, "loss": 2.5, "simclr": 2.5, "pos_sim_mean": 0.9,
               "neg_sim_mean": 0.01, "neg_sim_var": 0.03, "images_per_s": 900.0,
               "epoch_seconds": 1.5}
    line = format_epoch(metrics, 10)
    assert line.startswith("epoch 5/10: loss 2.5000, lr 0.05,") and "simclr" not in line
