"""The command line: help and the demo."""

from __future__ import annotations

import subprocess
import sys

from contrastkit import cli, losses


def test_help_lists_the_demo(capsys):
    assert cli.main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_demo_prints_every_loss_lower_at_the_optimum(capsys):
    assert cli.main(["demo", "--n", "6", "--d", "8"]) == 0
    out = capsys.readouterr().out
    every = losses.names(regularizers=True)
    rows = [line.split() for line in out.splitlines()[1:1 + len(every)]]
    names = [row[0] for row in rows]
    assert names == list(every)
    for row in rows:
        optimum, random = float(row[-2]), float(row[-1])
        assert optimum < random


def test_demo_bad_dimension_is_a_clear_error(capsys):
    assert cli.main(["demo", "--n", "6", "--d", "2"]) == 2
    assert "d must be >= n - 1" in capsys.readouterr().err


def test_module_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "contrastkit", "--version"], capture_output=True, text=True,
        check=True,
    )
    assert result.stdout.startswith("contrastkit ")
