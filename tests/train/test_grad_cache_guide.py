"""The gradient-caching guide's trainer command (docs/grad-cache.md, "In the trainer") does what
the guide says, run as copied: a batch of 1 024 on the digits, chunk by chunk, trains a good
model (no collapsed epoch, a linear probe above raw pixels') rather than the collapse that the
default settings give at that batch."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from contrastkit.cli import main

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "grad-cache.md"
#: The linear probe on raw pixels of the 360 held-out digits, as the guide quotes it (%).
RAW_PIXELS = 91.1


def guide_commands() -> list[list[str]]:
    """The ``contrastkit`` commands of the guide's "In the trainer" code block."""
    section = GUIDE.read_text().split("## In the trainer", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("contrastkit")]


def test_the_guide_s_trainer_block_is_a_training_then_an_evaluation():
    train, evaluate = guide_commands()
    assert train[0] == "pretrain" and "grad_cache_chunk=64" in train and "batch_size=1024" in train
    assert evaluate[0] == "evaluate"


@pytest.mark.slow
def test_the_guide_s_command_trains_a_good_model(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # its runs/ folder, as a user's, in a scratch directory
    train, evaluate = guide_commands()
    assert main([*train, "progress=false"]) == 0
    run = tmp_path / evaluate[1]
    epochs = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert len(epochs) == 100 and not any(epoch["collapsed_epochs"] for epoch in epochs)
    assert epochs[-1]["neg_sim_mean"] < 0.2 and epochs[-1]["loss"] < epochs[0]["loss"]
    assert main([*evaluate, "--no-progress"]) == 0
    linear = json.loads((run / "eval.json").read_text())["linear_top1"]
    assert linear > RAW_PIXELS + 2, capsys.readouterr().out
