"""``contrastkit check-loss LOSS``: a PASS/FAIL line per property, exit status 1 when one fails,
and a bad LOSS is one line with exit status 2."""

from __future__ import annotations

import pytest

from contrastkit import cli


def test_a_correct_loss_passes_with_exit_status_0(capsys):
    assert cli.main(["check-loss", "tests.testing.planted:Correct", "--world-sizes", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS  2 processes: largest difference ")
    assert out.rstrip().endswith("tests.testing.planted.Correct: every property holds")


def test_a_planted_bug_fails_with_exit_status_1(capsys):
    argv = ["check-loss", "tests.testing.planted:GatherWithoutGradient", "--world-sizes", "2"]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL  2 processes: largest difference " in out
    assert "1 property failed (2 processes)" in out


def test_a_registered_name_takes_its_settings(capsys):
    argv = ["check-loss", "vrns", "--setting", "n=50", "--world-sizes", "2"]
    assert cli.main(argv) == 0
    assert "vrns: every property holds" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["no_such_loss"], "LOSS must be module:callable (e.g. mypkg.losses:MyLoss) or a "
                       "registered loss name"),
    (["tests.testing.no_such_module:Correct"], "no module named 'tests.testing.no_such_module'"),
    (["tests.testing.planted:Nope"], "tests.testing.planted has no attribute 'Nope'"),
    ([":Correct"], "LOSS must be module:callable such as"),
    (["contrastkit.losses:simclr"], "could not build the loss"),
    (["vrns"], "missing 1 required positional argument: 'n'"),
    (["simclr", "--setting", "n"], "--setting must be NAME=VALUE"),
    (["simclr", "--world-sizes", "3"], "it does not for [3]"),
])
def test_a_bad_argument_is_one_line_with_exit_status_2(argv, words, capsys, monkeypatch):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    assert cli.main(["check-loss", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("contrastkit check-loss: error: ")
    assert len(err.strip().splitlines()) == 1
    assert words in err
