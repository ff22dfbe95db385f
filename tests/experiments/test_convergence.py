"""Whether a pretraining cell converged: the half-way probe, the stated criterion, and the
``converged`` metric of every pretraining cell's rows."""

from __future__ import annotations

import json

import pytest

from contrastkit.experiments import load_recipe, run_recipe
from contrastkit.experiments.convergence import (
    ACCURACY_POINTS,
    LOSS_SHARE,
    PRETRAIN_INPUTS,
    RECORD,
    HalfWayProbe,
    converged,
    half_way,
    judge,
    judge_finished,
    judge_metrics,
    loss_share,
)
from tests.experiments.tiny_recipes import PRETRAIN, recipe, write_recipe


def record(folder, epoch=5, loss=2.0, linear=80.0, first=4.0):
    """A run folder's half-way record, and its metrics.jsonl with the first epoch's loss."""
    (folder / RECORD).write_text(json.dumps({"epoch": epoch, "loss": loss,
                                             "linear_top1": linear, "knn_top1": 0.0}))
    lines = [{"epochs_completed": 1, "loss": first}, {"epochs_completed": epoch, "loss": loss}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def share_by_hand(first, half, final):
    """The second half's share of the loss's fall, written out from the definition."""
    top = first if first > half else half
    return max(half - final, 0.0) / (top - final) if half > final else 0.0


@pytest.mark.parametrize("first, half, final", [
    (4.0, 2.0, 1.8), (4.0, 2.0, 2.0), (4.0, 2.0, 2.3), (1.0, 2.0, 1.5), (3.5, -1.9, -2.3)])
def test_the_loss_share_is_the_second_halfs_part_of_the_whole_fall(first, half, final):
    assert loss_share(first, half, final) == pytest.approx(share_by_hand(first, half, final))


@pytest.mark.parametrize("shift, scale", [(0.0, 1.0), (-7.5, 1.0), (100.0, 3.0), (-3.0, 0.01)])
def test_the_loss_rule_does_not_depend_on_the_losss_offset_or_scale(shift, scale):
    """DCL's and DHEL's losses are negative, VRNS adds a term: the same curve shifted or
    scaled gets the same verdict (a rule relative to the loss's value would not)."""
    for first, half, final in [(4.0, 2.0, 1.85), (4.0, 2.0, 1.7), (3.57, -1.91, -2.29)]:
        moved = [scale * value + shift for value in (first, half, final)]
        assert loss_share(*moved) == pytest.approx(loss_share(first, half, final))
        assert judge(moved[0], {"loss": moved[1]}, moved[2])[0]["converged"] == \
            judge(first, {"loss": half}, final)[0]["converged"]


def test_the_fig4_dcl_run_that_the_relative_rule_refused_has_converged():
    """A DCL run's losses as recorded (digits, batch 128, 100 epochs): it made 6.5 % of its fall
    in the second half, although it fell 19.8 % of its (negative) half-way value."""
    first, half, final = 3.569, -1.908, -2.286
    assert (half - final) / abs(half) > LOSS_SHARE
    assert judge(first, {"loss": half}, final) == (
        {"converged": 1.0, "first_loss": first, "half_loss": half}, "converged")


@pytest.mark.parametrize("epochs, half", [(1, 1), (2, 1), (3, 2), (10, 5), (11, 6)])
def test_the_half_way_epoch(epochs, half):
    assert half_way(epochs) == half


@pytest.mark.parametrize("final_loss, final_linear, expected, reason", [
    (2.0, 80.0, 1.0, "converged"),
    # first 4, half 2: a fall of f after half-way is f / (2 + f) of the whole fall
    (2.0 - 2 * LOSS_SHARE / (1 - LOSS_SHARE) + 1e-9, 80.0 + ACCURACY_POINTS, 1.0, "converged"),
    (2.0, 80.0 + ACCURACY_POINTS + 0.01, 0.0, "linear top-1 moved +1.01 points in the second half"),
    (2.0, 80.0 - ACCURACY_POINTS - 0.5, 0.0, "linear top-1 moved -1.50 points in the second half"),
    (1.5, 80.0, 0.0, "training loss made 20.0 % of its fall in the second half"),
])
def test_a_run_converged_when_its_second_half_changed_little(tmp_path, final_loss, final_linear,
                                                            expected, reason):
    record(tmp_path)
    metrics, words = converged(tmp_path, 10, final_loss, final_linear)
    assert metrics["converged"] == expected and words == reason
    assert metrics["half_linear_top1"] == 80.0 and metrics["half_loss"] == 2.0
    assert metrics["first_loss"] == 4.0
    recorded = {**metrics, "train_loss": final_loss, "linear_top1": final_linear}
    assert judge_metrics(recorded) == expected


def test_a_finished_cell_is_judged_again_by_todays_rule(tmp_path):
    """A result.json written under an older rule (here: marked not converged, with no
    ``first_loss``) gets today's verdict, its inputs and its words when it is read."""
    record(tmp_path, loss=-1.908, linear=99.2, first=3.569)
    old = {"metrics": {"train_loss": -2.286, "linear_top1": 99.4, "converged": 0.0,
                       "half_loss": -1.908, "half_linear_top1": 99.2, "knn_top1": 94.7},
           "cell": {"epochs": 100, "convergence": "training loss fell 19.8 % since epoch 50"},
           "seconds": 1.0}
    again = judge_finished(old, tmp_path)
    assert again["metrics"] == {"train_loss": -2.286, "linear_top1": 99.4, "knn_top1": 94.7,
                                "converged": 1.0, "first_loss": 3.569, "half_loss": -1.908,
                                "half_linear_top1": 99.2}
    assert again["cell"]["convergence"] == "converged" and again["seconds"] == 1.0


def test_a_result_without_epochs_or_a_training_loss_is_left_as_it_is(tmp_path):
    record(tmp_path)
    for result in ({"metrics": {"train_loss": 1.0, "converged": 0.0}, "cell": {}},
                   {"metrics": {"converged": 1.0}, "cell": {"epochs": 10}}):
        assert judge_finished(result, tmp_path) == result


def test_a_verdict_needs_every_input():
    full = {"first_loss": 4.0, "half_loss": 2.0, "train_loss": 1.9, "half_linear_top1": 80.0,
            "linear_top1": 80.5}
    assert judge_metrics(full) == 1.0
    for name in PRETRAIN_INPUTS:
        assert judge_metrics({key: value for key, value in full.items() if key != name}) is None
    assert judge_metrics({"first_train_loss": 4.0, "half_train_loss": 2.0,
                          "train_loss": 1.0}) == 0.0


def test_a_run_that_cannot_be_judged_does_not_count_as_converged(tmp_path):
    assert converged(tmp_path, 10, 1.0, 90.0) == ({"converged": 0.0},
                                                   f"no half-way record ({RECORD})")
    record(tmp_path, epoch=1)
    (tmp_path / "metrics.jsonl").unlink()
    assert converged(tmp_path, 10, 1.0, 90.0) == ({"converged": 0.0},
                                                   "no first epoch in metrics.jsonl")
    assert converged(tmp_path, 1, 2.0, 80.0) == ({"converged": 0.0},
                                                  "one epoch has no second half to judge")


def test_a_damaged_metrics_file_is_a_clear_error_not_a_verdict(tmp_path):
    record(tmp_path)
    with (tmp_path / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"epochs_completed": 6, "lo')  # a write cut short by a full disk
    with pytest.raises(ValueError, match=r"metrics\.jsonl line 3 .*damaged"):
        converged(tmp_path, 10, 1.0, 90.0)


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
    recorded = {row["metric"]: row["value"] for row in rows}
    assert set(PRETRAIN_INPUTS) <= set(recorded)
    assert judge_metrics(recorded) == recorded["converged"]


def test_a_one_epoch_run_is_not_probed_half_way(tmp_path):
    """Its half-way checkpoint is its last, and one epoch is never judged: no second probe."""
    probe = HalfWayProbe(tmp_path, epochs=1)
    probe(1, {"loss": 1.0})
    assert not (tmp_path / RECORD).exists()


class Killed(Exception):
    """Stands for a kill of the sweep during the half-way probe."""


def test_a_cell_stopped_during_its_half_way_probe_probes_before_it_resumes(tmp_path, monkeypatch):
    import contrastkit.evaluate as evaluate
    from contrastkit.experiments import runner

    content = recipe(PRETRAIN, grid={"batch_size": [128]})
    content["tiers"]["quick"].update(seeds=1, set={"epochs": 2})
    cell = load_recipe(write_recipe(tmp_path, content)).cells("quick")[0]
    out = tmp_path / "out"
    real_probe_run = evaluate.probe_run

    def killed(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(evaluate, "probe_run", killed)
    with pytest.raises(Killed):
        runner.run_cell(cell, out)
    assert not (cell.folder(out) / RECORD).exists()
    probed = []

    def spy(run_dir, *args, **kwargs):
        result = real_probe_run(run_dir, *args, **kwargs)
        probed.append(result["epochs_completed"])
        return result

    monkeypatch.setattr(evaluate, "probe_run", spy)
    result = runner.run_cell(cell, out)
    assert probed == [1]  # the half-way checkpoint, before epoch 2 trained
    half = json.loads((cell.folder(out) / RECORD).read_text())
    first_epoch = json.loads((cell.folder(out) / "metrics.jsonl").read_text().splitlines()[0])
    assert half["epoch"] == 1 and half["loss"] == first_epoch["loss"]
    assert result["cell"]["convergence"] != f"no half-way record ({RECORD})"
    assert "half_linear_top1" in result["metrics"]
