"""Whether a pretraining cell converged: the half-way probe, the stated criterion, and the
``converged`` metric of every pretraining cell's rows."""

from __future__ import annotations

import json

import pytest

from contrastkit.experiments import load_recipe, run_recipe
from contrastkit.experiments.convergence import (
    ACCURACY_POINTS,
    LOSS_SHARE,
    RECORD,
    converged,
    half_way,
)
from tests.experiments.tiny_recipes import PRETRAIN, recipe, write_recipe


def record(folder, epoch=5, loss=2.0, linear=80.0):
    (folder / RECORD).write_text(json.dumps({"epoch": epoch, "loss": loss,
                                             "linear_top1": linear, "knn_top1": 0.0}))


@pytest.mark.parametrize("epochs, half", [(1, 1), (2, 1), (3, 2), (10, 5), (11, 6)])
def test_the_half_way_epoch(epochs, half):
    assert half_way(epochs) == half


@pytest.mark.parametrize("final_loss, final_linear, expected, reason", [
    (2.0, 80.0, 1.0, "converged"),
    (2.0 * (1 - LOSS_SHARE) + 1e-9, 80.0 + ACCURACY_POINTS, 1.0, "converged"),
    (2.0, 80.0 + ACCURACY_POINTS + 0.01, 0.0, "linear top-1 moved +1.01 points since epoch 5"),
    (2.0, 80.0 - ACCURACY_POINTS - 0.5, 0.0, "linear top-1 moved -1.50 points since epoch 5"),
    (1.7, 80.0, 0.0, "training loss fell 15.0 % since epoch 5"),
])
def test_a_run_converged_when_its_second_half_changed_little(tmp_path, final_loss, final_linear,
                                                            expected, reason):
    record(tmp_path)
    metrics, words = converged(tmp_path, 10, final_loss, final_linear)
    assert metrics["converged"] == expected and words == reason
    assert metrics["half_linear_top1"] == 80.0 and metrics["half_loss"] == 2.0


def test_a_run_that_cannot_be_judged_does_not_count_as_converged(tmp_path):
    assert converged(tmp_path, 10, 1.0, 90.0) == ({"converged": 0.0},
                                                   f"no half-way record ({RECORD})")
    record(tmp_path, epoch=1)
    assert converged(tmp_path, 1, 2.0, 80.0) == ({"converged": 0.0},
                                                  "one epoch has no second half to judge")


def test_a_pretrain_cell_probes_its_half_way_checkpoint_and_records_converged(tmp_path):
    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 2})
    chosen = load_recipe(write_recipe(tmp_path, content))
    rows = run_recipe(chosen, "quick", tmp_path / "out", progress=False)
    cell = chosen.cells("quick")[0]
    half = json.loads((cell.folder(tmp_path / "out") / RECORD).read_text())
    assert half["epoch"] == 1 and 0 <= half["linear_top1"] <= 100
    result = json.loads((cell.folder(tmp_path / "out") / "result.json").read_text())
    expected, words = converged(cell.folder(tmp_path / "out"), 2,
                                result["metrics"]["train_loss"],
                                result["metrics"]["linear_top1"])
    assert result["metrics"]["converged"] == expected["converged"]
    assert result["cell"]["convergence"] == words
    assert [row["value"] for row in rows if row["metric"] == "converged"] == [
        expected["converged"]]
