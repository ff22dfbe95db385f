"""Whether a training cell converged: the versioned rule (a curve settles over the second
half, in either direction, judged on a line through a window of epochs), the half-way probe,
and the ``converged`` metric of every pretraining cell's rows."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from contrastkit.experiments import load_recipe, run_recipe
from contrastkit.experiments.convergence import (
    ACCURACY_POINTS,
    CONVERGENCE_RULE_VERSION,
    DRIFT_SHARE,
    LACKS,
    MIN_POINTS,
    PRETRAIN_INPUTS,
    RULE,
    RUN_ALPHA,
    UNFITTED,
    drift,
    half_way,
    judge_curves,
    judge_metrics,
    noise_bound,
    rejudge_rows,
    why_not,
)
from contrastkit.experiments.convergence_record import (
    RECORD,
    HalfWayProbe,
    converged,
    judge_finished,
)
from tests.experiments.tiny_recipes import PRETRAIN, recipe, write_recipe

EPOCHS = np.arange(1, 101)
#: A shorter run: 21 points in its second half.
SHORT = np.arange(1, 41)


def settling(epochs=EPOCHS, top=5.0, floor=3.0, scale=5.0):
    """A loss that falls fast and then flattens: ``floor + (top - floor) exp(-epoch / scale)``."""
    return floor + (top - floor) * np.exp(-np.asarray(epochs) / scale)


def noisy(values, sd, seed=0):
    return np.asarray(values) + np.random.default_rng(seed).normal(0.0, sd, len(values))


def test_a_loss_that_rises_in_the_second_half_has_not_converged():
    """The earlier rule counted only a fall, so a loss drifting back up (HUCL at a large
    beta drifting toward log 2) always passed."""
    rising = settling() + np.where(EPOCHS > 50, 0.01 * (EPOCHS - 50), 0.0)
    assert drift(EPOCHS, rising) > 1.0
    metrics, words = judge_curves({"loss": (EPOCHS, rising)})
    assert metrics["converged"] == 0.0 and words.startswith("loss rose")


def test_a_loss_still_falling_fast_has_not_converged():
    falling = 5.0 - 0.04 * EPOCHS
    assert drift(EPOCHS, falling) < -1.0
    assert judge_curves({"loss": (EPOCHS, falling)})[0]["converged"] == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_flat_loss_has_converged(seed):
    """Noise about a settled level is not a trend: within its standard errors, or small
    against the run's range."""
    metrics, words = judge_curves({"loss": (EPOCHS, noisy(settling(), 0.05, seed))})
    assert metrics["converged"] == 1.0 and words == "converged"
    flat = noisy(np.full(100, 2.0), 0.3, seed)  # pure noise: its range is all noise
    assert judge_curves({"loss": (EPOCHS, flat)})[0]["converged"] == 1.0


@pytest.mark.parametrize("curves", [1, 4, 9])
@pytest.mark.parametrize("points", [MIN_POINTS, 6, 51, 1001])
def test_the_noise_bound_is_bonferroni_over_the_runs_curves(curves, points):
    """Each of a run's m curves is allowed a two-sided tail of RUN_ALPHA / m of Student's t
    with the fit's degrees of freedom; more curves, a wider bound; more points, a narrower."""
    bound = noise_bound(curves, points)
    assert 2 * stats.t.sf(bound, points - 2) == pytest.approx(RUN_ALPHA / curves, rel=1e-9)
    assert noise_bound(curves + 1, points) > bound > noise_bound(curves, points + 1)
    assert bound > stats.norm.isf(RUN_ALPHA / (2 * curves))  # t's tails are heavier than z's


def test_the_noise_bound_tends_to_the_normal_quantile_with_many_points():
    """With many points the bound is z = Phi^-1(1 - RUN_ALPHA / (2 m)): 1.96 for one curve."""
    for curves in (1, 9):
        assert noise_bound(curves, 10**6) == pytest.approx(
            stats.norm.isf(RUN_ALPHA / (2 * curves)), rel=1e-4)


@pytest.mark.parametrize("curves, points", [(0, 10), (1, 2), (1.5, 10), (True, 10)])
def test_a_bad_count_of_curves_or_points_is_a_clear_error(curves, points):
    with pytest.raises(ValueError, match="curves|points"):
        noise_bound(curves, points)


@pytest.mark.parametrize("curves", [1, 9])
def test_runs_whose_curves_do_not_move_fail_at_the_stated_rate(curves):
    """The rule's error rate, by simulation (float64, a fixed seed): runs of ``curves`` curves
    of pure independent normal noise (40 epochs, 21 points in the second half, where the
    range allowance is far below the noise bound and never decides) fail at the family-wise
    rate 1 - (1 - RUN_ALPHA / m)^m, at most RUN_ALPHA: not one in twenty per curve (a
    bound of 2 standard errors fails about 41 % of such runs of 9 curves, the normal
    quantile in place of t's 9 %, by the same simulation)."""
    runs, epochs = 2000, SHORT
    rng = np.random.default_rng(20261127)
    failed = 0
    for _ in range(runs):
        noise = rng.normal(0.0, 1.0, size=(curves, len(epochs)))
        named = {f"c{index}": (epochs, values) for index, values in enumerate(noise)}
        failed += judge_curves({"loss": named.pop("c0"), **named})[0]["converged"] == 0.0
    rate = 1.0 - (1.0 - RUN_ALPHA / curves) ** curves
    assert rate <= RUN_ALPHA + 1e-12
    assert abs(failed / runs - rate) <= 4.0 * math.sqrt(rate * (1.0 - rate) / runs)


def line_with_t(slope_t: float, epochs=SHORT, seed=0):
    """A curve flat over the first half and, over the second, a line whose fitted change is
    ``slope_t`` standard errors from none (its residuals drawn, then made orthogonal to the
    line), so that only the noise bound decides."""
    half = epochs >= epochs[-1] / 2
    xs = epochs[half] - epochs[half].mean()
    residuals = np.random.default_rng(seed).normal(0.0, 1.0, len(xs))
    basis = np.stack([np.ones_like(xs), xs], axis=1)
    residuals -= basis @ np.linalg.lstsq(basis, residuals, rcond=None)[0]
    se_slope = math.sqrt(residuals @ residuals / (len(xs) - 2) / (xs @ xs))
    values = np.zeros(len(epochs))
    values[half] = slope_t * se_slope * xs + residuals
    return epochs, values


def test_a_run_of_many_curves_allows_each_the_corrected_bound_and_no_more():
    """A curve 2.5 standard errors from no change fails a run judged on it alone (bound
    t_19 at 2.5 % = 2.09) and passes one judged on 9 curves (t_19 at 0.28 % = 3.18); 4
    standard errors fail both."""
    settled = {f"flat{index}": (SHORT, np.full(len(SHORT), 1.0)) for index in range(8)}
    within = line_with_t(2.5)
    assert drift(*within, curves=1) > 1.0 >= drift(*within, curves=9)
    assert judge_curves({"loss": within})[0]["converged"] == 0.0
    assert judge_curves({"loss": within, **settled})[0]["converged"] == 1.0
    rising = line_with_t(4.0)
    metrics, words = judge_curves({"loss": rising, **settled})
    assert metrics["converged"] == 0.0 and words.startswith("loss rose")
    assert judge_curves({"loss": line_with_t(-4.0), **settled})[1].startswith("loss fell")


def test_a_slow_drift_hidden_in_noise_fails_even_judged_on_nine_curves():
    """The correction keeps the rule's power: a loss drifting up by 1.5 noise sd over the
    second half of 200 epochs (about 4.4 standard errors of its fitted change, against a bound
    of 2.8 for 9 curves) fails a run of 9 curves."""
    epochs = np.arange(1, 201)
    loss = noisy(settling(epochs) + np.where(epochs > 100, 0.015 * (epochs - 100), 0.0), 1.0,
                 seed=3)
    others = {f"flat{index}": (epochs, noisy(np.zeros(200), 1.0, seed=index))
              for index in range(8)}
    assert judge_curves({"loss": (epochs, loss), **others})[0]["converged"] == 0.0


def test_a_trend_within_the_noise_is_judged_on_the_whole_half_not_two_values():
    """A full-batch run's last value can jump: one jump moves a line through the half's 51
    points little, where two single values (half-way and last) would call a 15 % fall."""
    curve = settling()
    curve[-1] -= 0.3
    assert abs(drift(EPOCHS, curve)) <= 1.0
    assert (curve[49] - curve[-1]) / (curve.max() - curve.min()) > DRIFT_SHARE


def test_the_claims_metric_must_settle_as_well_as_the_loss():
    loss = (EPOCHS, settling())
    variance = (EPOCHS, 0.02 + 0.0002 * EPOCHS)  # still growing
    metrics, words = judge_curves({"loss": loss, "neg_sim_var": variance})
    assert metrics["converged"] == 0.0 and words.startswith("neg_sim_var rose")
    assert metrics["drift_loss"] == pytest.approx(drift(*loss))
    settled_variance = (EPOCHS, settling(top=0.05, floor=0.02))
    assert judge_curves({"loss": loss, "neg_sim_var": settled_variance})[0]["converged"] == 1.0


@pytest.mark.parametrize("shift, scale", [(0.0, 1.0), (-7.5, 1.0), (100.0, 3.0), (-3.0, 0.01)])
def test_the_rule_does_not_depend_on_the_curves_offset_or_scale(shift, scale):
    """DCL's and DHEL's losses are negative, VRNS adds a term: the same curve shifted or
    scaled gets the same drift (a rule relative to the loss's value would not)."""
    for curve in (settling(), 5.0 - 0.04 * EPOCHS, noisy(settling(), 0.05)):
        assert drift(EPOCHS, scale * curve + shift) == pytest.approx(drift(EPOCHS, curve))


def test_a_curve_too_short_to_fit_or_not_finite_has_not_converged():
    short = np.arange(1, 2 * MIN_POINTS - 2)  # MIN_POINTS - 1 points from half-way on
    assert math.isnan(drift(short, settling(short)))
    assert judge_curves({"loss": (short, settling(short))})[0]["converged"] == 0.0
    broken = settling()
    broken[70] = math.nan
    assert judge_curves({"loss": (EPOCHS, broken)})[0]["converged"] == 0.0
    assert judge_curves({"neg_sim_var": (EPOCHS, settling())})[0]["converged"] == 0.0
    with pytest.raises(ValueError, match="epochs and values"):
        drift([1, 2, 3], [1.0, 2.0])


def test_a_curve_that_cannot_be_fitted_is_counted_and_fails_the_run():
    """A row holds finite values only: a curve too sparse to fit (an NC curve recorded every
    10 of 30 epochs) records no drift, the run counts it instead, and its verdict follows from
    that count."""
    sparse = np.array([10, 20, 30])
    metrics, words = judge_curves({"loss": (SHORT[:30], settling(SHORT[:30])),
                                   "nc_gap": (sparse, 1.0 / sparse)})
    assert "drift_nc_gap" not in metrics and metrics[UNFITTED] == 1.0
    assert all(math.isfinite(value) for value in metrics.values())
    assert metrics["converged"] == 0.0 and words.startswith("nc_gap: too few points")
    assert judge_metrics(metrics) == 0.0
    assert judge_metrics({name: value for name, value in metrics.items()
                          if name != UNFITTED}) == 1.0  # the count decides
    assert UNFITTED not in judge_curves({"loss": (EPOCHS, settling())})[0]


def test_curves_recorded_every_few_epochs_are_fitted_at_their_epochs():
    epochs = np.arange(10, 101, 10)  # a hard-negative run's curves, every 10 epochs
    assert abs(drift(epochs, settling(epochs))) <= 1.0
    assert judge_curves({"loss": (EPOCHS, settling()),
                         "nc_gap": (epochs, 1.0 - 0.009 * epochs)})[0]["converged"] == 0.0


@pytest.mark.parametrize("half_probe, final_probe, expected", [
    (80.0, 80.0 + ACCURACY_POINTS, 1.0), (80.0, 80.0 + ACCURACY_POINTS + 0.01, 0.0),
    (80.0, 80.0 - ACCURACY_POINTS - 0.5, 0.0)])
def test_the_probe_must_settle_too(half_probe, final_probe, expected):
    metrics, _ = judge_curves({"loss": (EPOCHS, settling())}, (half_probe, final_probe))
    assert metrics["converged"] == expected and metrics["half_linear_top1"] == half_probe
    assert judge_metrics({**metrics, "linear_top1": final_probe}) == expected


def test_every_verdict_records_its_rules_version_and_follows_from_its_inputs():
    for curves in ({"loss": (EPOCHS, settling())}, {"loss": (EPOCHS, 5.0 - 0.04 * EPOCHS)},
                   {"loss": (EPOCHS, settling()), "nc_gap": (EPOCHS, 0.5 - 0.004 * EPOCHS)}):
        metrics, _ = judge_curves(curves)
        assert metrics[RULE] == CONVERGENCE_RULE_VERSION
        assert judge_metrics(metrics) == metrics["converged"]


def test_a_record_of_an_earlier_rule_or_without_a_version_is_not_converged():
    """Rule 1 recorded the loss at three epochs (and the probe): not the curves today's rule
    needs, so its runs count as not converged, and say why."""
    old = {"first_loss": 4.0, "half_loss": 2.0, "train_loss": 1.99, "half_linear_top1": 80.0,
           "linear_top1": 80.1, "converged": 1.0}
    assert judge_metrics(old) == 0.0
    assert judge_metrics({**old, RULE: 1.0}) == 0.0
    rows = [{"cell": "a", "seed": seed, "metric": name, "value": value}
            for seed in (0, 1) for name, value in old.items()]
    rows += [{"cell": "sim", "seed": 0, "metric": "s_measured", "value": 1.0}]
    again = rejudge_rows(rows)
    by_run = runs_of(again)
    assert by_run[("a", 0)] == by_run[("a", 1)] == {**old, "converged": 0.0,
                                                    RULE: CONVERGENCE_RULE_VERSION}
    assert by_run[("sim", 0)] == {"s_measured": 1.0}  # never judged: left as it is
    assert rejudge_rows(again) == again


def test_a_record_of_rule_2_loses_its_drifts_and_is_not_converged():
    """Rule 2 recorded each curve's drift in its own allowances (2 standard errors whatever
    the number of curves): not today's, so the run is not converged, its drifts are dropped
    (a verdict then follows from the row it sits beside) and its claims say what it lacks."""
    rule_2 = {"kmeans_accuracy": 70.0, "converged": 1.0, RULE: 2.0, "drift_loss": 0.99}
    rows = [{"cell": "a", "seed": 0, "metric": name, "value": value}
            for name, value in rule_2.items()]
    assert judge_metrics(rule_2) == 0.0
    again = runs_of(rejudge_rows(rows))[("a", 0)]
    assert again == {"kmeans_accuracy": 70.0, "converged": 0.0, RULE: CONVERGENCE_RULE_VERSION}
    assert why_not(again) == LACKS


def runs_of(rows):
    """(cell, seed) -> metric -> value of tidy ``rows``."""
    by_run = {}
    for row in rows:
        by_run.setdefault((row["cell"], row["seed"]), {})[row["metric"]] = row["value"]
    return by_run


def test_a_claim_on_an_old_record_says_it_lacks_what_the_rule_needs():
    from contrastkit.experiments.claims import evaluate_claim

    rows = [{"cell": f"vrns={vrns}", "seed": seed, "vrns": vrns, "metric": metric,
             "value": value}
            for vrns in (0.0, 30.0) for seed in range(3)
            for metric, value in (("neg_sim_var", 0.02 - vrns / 3000 + seed / 1000),
                                  ("converged", 1.0))]
    spec = {"id": "lower", "text": "VRNS lowers the variance", "metric": "neg_sim_var",
            "test": "lower", "treatment": {"vrns": 30.0}, "control": {"vrns": 0.0}}
    assert evaluate_claim(spec, rows).verdict == "supported"
    verdict = evaluate_claim(spec, rejudge_rows(rows))
    assert verdict.verdict == "not converged" and LACKS in verdict.detail


def write_run(folder, losses, variances=None, half_probe=80.0):
    """A run folder's metrics.jsonl (one record per epoch) and its half-way record."""
    lines = [{"epochs_completed": epoch, "loss": float(loss),
              **({} if variances is None else {"neg_sim_var": float(variances[epoch - 1])})}
             for epoch, loss in enumerate(losses, start=1)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / RECORD).write_text(json.dumps({"epoch": half_way(len(losses)), "loss": 0.0,
                                             "linear_top1": half_probe, "knn_top1": 0.0}))


@pytest.mark.parametrize("epochs, half", [(1, 1), (2, 1), (3, 2), (10, 5), (11, 6)])
def test_the_half_way_epoch(epochs, half):
    assert half_way(epochs) == half


def test_a_pretraining_run_is_judged_from_its_folders_curves_and_probes(tmp_path):
    write_run(tmp_path, settling(), settling(top=0.05, floor=0.02))
    metrics, words = converged(tmp_path, 100, 80.5)
    assert words == "converged" and metrics["converged"] == 1.0
    assert set(metrics) == {"converged", *(name for name in PRETRAIN_INPUTS
                                           if name not in ("drift_pos_sim_mean",
                                                           "drift_neg_sim_mean",
                                                           "drift_online_ndcg10",
                                                           "linear_top1", UNFITTED))}
    write_run(tmp_path, settling(), 0.02 + 0.0002 * EPOCHS)
    assert converged(tmp_path, 100, 80.5)[0]["converged"] == 0.0


def test_a_text_pair_run_is_judged_on_its_held_out_ndcg_curve_too(tmp_path):
    """A text-pair run (no linear probe) records online_ndcg10 per epoch: a run whose loss and
    variance settle but whose held-out nDCG@10 still climbs has not converged, and its curves
    are five, each judged at the bound for five."""
    write_run(tmp_path, settling(), settling(top=0.05, floor=0.02))
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    climbing = 0.1 + 0.3 * EPOCHS / EPOCHS[-1]
    lines = [{**record, "online_ndcg10": float(value)}
             for record, value in zip(records, climbing, strict=True)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    metrics, words = converged(tmp_path, 100, None)
    assert metrics["converged"] == 0.0 and "online_ndcg10 rose" in words
    assert metrics["drift_online_ndcg10"] > 1 and "half_linear_top1" not in metrics
    flat = [{**line, "online_ndcg10": 0.4} for line in lines]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in flat))
    metrics, words = converged(tmp_path, 100, None)
    assert words == "converged" and metrics["drift_online_ndcg10"] == 0.0


def test_a_finished_cell_is_judged_again_by_todays_rule(tmp_path):
    """A result.json written under rule 1 (marked converged from three loss values) gets
    today's verdict, its inputs and its words when it is read: its rising loss fails."""
    rising = settling() + np.where(EPOCHS > 50, 0.01 * (EPOCHS - 50), 0.0)
    write_run(tmp_path, rising, half_probe=99.2)
    old = {"metrics": {"train_loss": float(rising[-1]), "linear_top1": 99.4, "converged": 1.0,
                       "first_loss": 5.0, "half_loss": 3.0, "half_linear_top1": 99.2,
                       "knn_top1": 94.7},
           "cell": {"epochs": 100, "convergence": "converged"}, "seconds": 1.0}
    again = judge_finished(old, tmp_path)
    assert again["metrics"] == {"train_loss": float(rising[-1]), "linear_top1": 99.4,
                                "knn_top1": 94.7, "converged": 0.0,
                                RULE: CONVERGENCE_RULE_VERSION,
                                "drift_loss": drift(EPOCHS, rising), "half_linear_top1": 99.2}
    assert again["cell"]["convergence"].startswith("loss rose") and again["seconds"] == 1.0


def test_a_result_without_epochs_or_a_training_loss_is_left_as_it_is(tmp_path):
    write_run(tmp_path, settling())
    for result in ({"metrics": {"train_loss": 1.0, "converged": 0.0}, "cell": {}},
                   {"metrics": {"converged": 1.0}, "cell": {"epochs": 10}}):
        assert judge_finished(result, tmp_path) == result


def test_a_run_that_cannot_be_judged_does_not_count_as_converged(tmp_path):
    unknown = {"converged": 0.0, RULE: CONVERGENCE_RULE_VERSION}
    assert converged(tmp_path, 10, 90.0) == (unknown, f"no half-way record ({RECORD})")
    assert converged(tmp_path, 1, 80.0) == (unknown, "one epoch has no second half to judge")


def test_a_damaged_metrics_file_is_a_clear_error_not_a_verdict(tmp_path):
    write_run(tmp_path, settling(np.arange(1, 11)))
    with (tmp_path / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"epochs_completed": 11, "lo')  # a write cut short by a full disk
    with pytest.raises(ValueError, match=r"metrics\.jsonl line 11 .*damaged"):
        converged(tmp_path, 12, 90.0)


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
                                result["metrics"]["linear_top1"])
    assert result["metrics"]["converged"] == expected["converged"]
    assert result["cell"]["convergence"] == words
    assert [row["value"] for row in rows if row["metric"] == "converged"] == [
        expected["converged"]]
    recorded = {row["metric"]: row["value"] for row in rows}
    assert recorded[RULE] == CONVERGENCE_RULE_VERSION
    assert recorded["converged"] == 0.0  # two epochs: too few points to fit a line
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
