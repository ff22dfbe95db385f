"""Every claim test on synthetic rows whose verdict is known: a clear effect in the claimed
direction (supported), a clear effect against it (not supported), noise (inconclusive)."""

from __future__ import annotations

import math
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from contrastkit.experiments.claims import evaluate_claim, evaluate_claims
from tests.experiments.synthetic_rows import make_rows

SEEDS = 5
BATCHES = [16, 64, 256]
TEMPERATURES = [0.1, 0.5, 2.0]


def _jitter(axes: dict, seed: int) -> float:
    """A seeded standard normal draw for each cell and seed."""
    key = zlib.crc32(repr(sorted(axes.items())).encode())
    return float(np.random.default_rng([key, seed]).normal())


def _variance_rows(effect, noise):
    """neg_sim_var over batch_size x vrns: falls with the batch at vrns=0; ``effect(axes)``
    is added, then ``noise`` x a seeded normal draw."""
    def value(axes, seed):
        return (0.2 - 0.01 * math.log2(axes["batch_size"]) + effect(axes)
                + noise * _jitter(axes, seed))
    return make_rows({"batch_size": BATCHES, "vrns": [0.0, 30.0]}, SEEDS, {"neg_sim_var": value},
                     fixed={"loss": "simclr"})


def _vrns(shift):
    """An effect of ``shift`` where VRNS is on."""
    return lambda axes: shift if axes["vrns"] == 30.0 else 0.0


VRNS_LOWERS = {"id": "vrns_lowers", "text": "VRNS lowers the variance", "metric": "neg_sim_var",
               "test": "lower", "treatment": {"vrns": 30.0}, "control": {"vrns": 0.0}}


@pytest.mark.parametrize(("shift", "noise", "verdict"), [
    (-0.05, 0.002, "supported"), (0.05, 0.002, "not supported"), (0.0, 0.02, "inconclusive")])
def test_lower(shift, noise, verdict):
    result = evaluate_claim(VRNS_LOWERS, _variance_rows(_vrns(shift), noise))
    assert result.verdict == verdict
    assert result.n == SEEDS
    assert result.effect == pytest.approx(shift, abs=5 * noise)


@pytest.mark.parametrize(("shift", "noise", "verdict"), [
    (0.05, 0.002, "supported"), (-0.05, 0.002, "not supported"), (0.0, 0.02, "inconclusive")])
def test_higher(shift, noise, verdict):
    claim = {**VRNS_LOWERS, "test": "higher"}
    assert evaluate_claim(claim, _variance_rows(_vrns(shift), noise)).verdict == verdict


def _at_batch(shifts):
    """VRNS shifts the value by ``shifts[batch_size]``."""
    return lambda axes: shifts[axes["batch_size"]] if axes["vrns"] == 30.0 else 0.0


@pytest.mark.parametrize(("shifts", "verdict"), [
    ({16: -0.05, 64: -0.05, 256: -0.05}, "supported"),
    ({16: -0.05, 64: 0.05, 256: -0.05}, "not supported"),   # contradicted at one level
    ({16: -0.05, 64: 0.0, 256: -0.05}, "inconclusive"),     # noise at one level
])
def test_lower_for_each_level(shifts, verdict):
    claim = {**VRNS_LOWERS, "for_each": "batch_size"}
    result = evaluate_claim(claim, _variance_rows(_at_batch(shifts), 0.01))
    assert result.verdict == verdict
    assert all(f"batch_size={batch}" in result.detail for batch in BATCHES)


def test_for_each_needs_every_level_where_averaging_would_hide_a_contradiction():
    """Averaged over batch sizes VRNS lowers the variance; at batch 64 it raises it."""
    rows = _variance_rows(_at_batch({16: -0.1, 64: 0.02, 256: -0.1}), 0.002)
    assert evaluate_claim(VRNS_LOWERS, rows).verdict == "supported"
    per_level = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"}, rows)
    assert per_level.verdict == "not supported"
    assert per_level.effect == pytest.approx(0.02, abs=0.005)  # the weakest level is reported


FALLS_WITH_BATCH = {"id": "falls", "metric": "neg_sim_var", "test": "decreasing",
                    "along": "batch_size", "where": {"vrns": 0.0}}


@pytest.mark.parametrize(("slope", "noise", "verdict"), [
    (0.0, 0.002, "supported"), (0.02, 0.002, "not supported"), (0.01, 0.05, "inconclusive")])
def test_decreasing_where(slope, noise, verdict):
    """The base variance falls by 0.01 per doubling of the batch; ``slope`` adds to that."""
    rows = _variance_rows(lambda axes: slope * math.log2(axes["batch_size"]), noise)
    result = evaluate_claim(FALLS_WITH_BATCH, rows)
    assert result.verdict == verdict
    assert "Spearman" in result.detail


def test_increasing_and_where_pick_the_cells():
    """It rises with the batch under VRNS only: increasing there, not without VRNS."""
    rows = _variance_rows(lambda axes: 0.02 * math.log2(axes["batch_size"]) * (
        axes["vrns"] == 30.0), 0.002)
    rising = {**FALLS_WITH_BATCH, "test": "increasing"}
    assert evaluate_claim({**rising, "where": {"vrns": 30.0}}, rows).verdict == "supported"
    assert evaluate_claim({**rising, "where": {"vrns": 0.0}}, rows).verdict == "not supported"


def _accuracy_rows(spread_on, spread_off, noise):
    """linear_top1 over temperature x vrns: a bump of height ``spread_*`` at temperature 0.5."""
    def value(axes, seed):
        spread = spread_on if axes["vrns"] == 30.0 else spread_off
        return 0.8 + spread * (axes["temperature"] == 0.5) + noise * _jitter(axes, seed)
    return make_rows({"temperature": TEMPERATURES, "vrns": [0.0, 30.0]}, SEEDS,
                     {"linear_top1": value})


LESS_SPREAD = {"id": "flat", "metric": "linear_top1", "test": "less_spread",
               "across": "temperature", "treatment": {"vrns": 30.0}, "control": {"vrns": 0.0}}


@pytest.mark.parametrize(("spread_on", "spread_off", "noise", "verdict"), [
    (0.01, 0.2, 0.005, "supported"), (0.2, 0.01, 0.005, "not supported"),
    (0.1, 0.1, 0.03, "inconclusive")])
def test_less_spread(spread_on, spread_off, noise, verdict):
    result = evaluate_claim(LESS_SPREAD, _accuracy_rows(spread_on, spread_off, noise))
    assert result.verdict == verdict


def _gain_rows(gain_small, gain_large, noise):
    """linear_top1 over loss x batch_size x vrns: VRNS adds ``gain_small`` at batch 16 and
    ``gain_large`` at batch 256, linearly in log batch between."""
    def value(axes, seed):
        where = (math.log2(axes["batch_size"]) - 4) / 4
        gain = gain_small + (gain_large - gain_small) * where
        return 0.7 + gain * (axes["vrns"] == 30.0) + noise * _jitter(axes, seed)
    return make_rows({"loss": ["simclr", "dcl"], "batch_size": BATCHES, "vrns": [0.0, 30.0]},
                     SEEDS, {"linear_top1": value})


LARGER_GAIN = {"id": "gain", "metric": "linear_top1", "test": "larger_gain",
               "along": "batch_size", "treatment": {"vrns": 30.0}, "control": {"vrns": 0.0}}


@pytest.mark.parametrize(("gain_small", "gain_large", "noise", "verdict"), [
    (0.05, 0.01, 0.003, "supported"), (0.01, 0.05, 0.003, "not supported"),
    (0.03, 0.03, 0.02, "inconclusive")])
def test_larger_gain(gain_small, gain_large, noise, verdict):
    result = evaluate_claim(LARGER_GAIN, _gain_rows(gain_small, gain_large, noise))
    assert result.verdict == verdict
    assert result.effect == pytest.approx(gain_small - gain_large, abs=0.03)


def _simulation_rows(error):
    """A simulate recipe's metrics over m: the measured values off the theory by ``error``."""
    metrics = {
        "full_neg_mean": lambda axes, seed: -1 / 7 + error * (seed + 1),
        "theory_full_neg_mean": lambda axes, seed: -1 / 7,
        "mini_neg_var": lambda axes, seed: 0.05 + error * seed,
        "theory_mini_var_low": lambda axes, seed: 0.04,
        "theory_mini_var_high": lambda axes, seed: 0.06,
    }
    return make_rows({"m": [2, 4]}, 3, metrics)


@pytest.mark.parametrize(("error", "verdict"), [(1e-6, "supported"), (1e-2, "not supported")])
def test_close_to_another_metric(error, verdict):
    claim = {"id": "optimum", "metric": "full_neg_mean", "test": "close",
             "target": "theory_full_neg_mean", "tolerance": 1e-4}
    result = evaluate_claim(claim, _simulation_rows(error))
    assert result.verdict == verdict
    assert result.effect == pytest.approx(3 * error)  # the largest deviation: seed 2
    assert result.n == 2 * 3
    assert math.isnan(result.p_value)


def test_close_to_a_number_is_never_inconclusive():
    """One seed slightly off is not supported: an exact claim has no noise to allow for."""
    claim = {"id": "optimum", "metric": "full_neg_mean", "test": "close", "target": -1 / 7,
             "tolerance": 1e-3}
    assert evaluate_claim(claim, _simulation_rows(1e-4)).verdict == "supported"
    assert evaluate_claim(claim, _simulation_rows(4e-4)).verdict == "not supported"


@pytest.mark.parametrize(("error", "verdict"), [(0.001, "supported"), (0.01, "not supported")])
def test_at_least_and_at_most_bound_a_metric_by_others(error, verdict):
    """mini_neg_var = 0.05 + error * seed within [0.04, 0.06]: error 0.01 exceeds the top."""
    rows = _simulation_rows(error)
    low = {"id": "low", "metric": "mini_neg_var", "test": "at_least",
           "target": "theory_mini_var_low"}
    high = {"id": "high", "metric": "mini_neg_var", "test": "at_most",
            "target": "theory_mini_var_high"}
    assert evaluate_claim(low, rows).verdict == "supported"
    result = evaluate_claim(high, rows)
    assert result.verdict == verdict
    assert result.effect == pytest.approx(0.05 + 2 * error - 0.06)


def test_a_tolerance_widens_at_most():
    high = {"id": "high", "metric": "mini_neg_var", "test": "at_most",
            "target": "theory_mini_var_high", "tolerance": 0.05}
    assert evaluate_claim(high, _simulation_rows(0.01)).verdict == "supported"


def test_one_seed_is_inconclusive_and_says_why():
    rows = [row for row in _variance_rows(_vrns(-0.05), 0.002) if row["seed"] == 0]
    result = evaluate_claim(VRNS_LOWERS, rows)
    assert (result.verdict, result.n) == ("inconclusive", 1)
    assert "needs >= 2 seeds" in result.detail


def test_evaluate_claims_reads_the_recipes_claims_as_mappings_or_objects():
    rows = _variance_rows(_vrns(-0.05), 0.002)
    as_object = SimpleNamespace(**{**FALLS_WITH_BATCH, "id": "object", "text": None,
                                   "treatment": None, "control": {}, "tolerance": None})
    recipe = SimpleNamespace(claims=[VRNS_LOWERS, as_object])
    verdicts = evaluate_claims(recipe, rows)
    assert [v.claim_id for v in verdicts] == ["vrns_lowers", "object"]
    assert [v.verdict for v in verdicts] == ["supported", "supported"]
    assert verdicts[0].as_dict()["text"] == "VRNS lowers the variance"
    assert evaluate_claims(SimpleNamespace(claims=[]), rows) == []


@pytest.mark.parametrize(("change", "message"), [
    ({"metric": "neg_sim_mean"}, "metric 'neg_sim_mean' is not in the results"),
    ({"treatment": {"vrns": 31.0}, "control": {"vrns": 0.0}}, "treatment vrns=31.0 matches no"),
    ({"where": {"temperature": 0.2}}, "where names 'temperature', not an axis"),
    ({"for_each": "seed"}, "for_each names 'seed', not an axis"),
    ({"treatment": {"loss": "dcl"}, "control": {"vrns": 0.0}}, "the same axes"),
    ({"test": "smaller"}, "test must be one of"),
    ({"along": "batch_size"}, "key 'along' does not apply to test 'lower'"),
    ({"control": None}, "test 'lower' needs 'control'"),
    ({"alpha": 2}, "alpha must be in"),
    ({"wher": {}}, "unknown key 'wher'"),
])
def test_a_bad_claim_is_an_error_naming_it(change, message):
    rows = _variance_rows(_vrns(-0.05), 0.002)
    with pytest.raises(ValueError, match=f"claim 'vrns_lowers': .*{message}"):
        evaluate_claim({**VRNS_LOWERS, **change}, rows)


@pytest.mark.parametrize(("claim", "message"), [
    ({"test": "close", "target": "theory_mini", "tolerance": 0.1}, "metric 'theory_mini' is not"),
    ({"test": "close", "target": 0.1}, "needs 'tolerance'"),
    ({"test": "close", "target": 0.1, "tolerance": -1}, "tolerance must be >= 0"),
    ({"test": "decreasing", "along": "m", "where": {"m": 2}}, "along 'm' needs >= 2 levels"),
])
def test_a_bad_exact_or_trend_claim_is_an_error_naming_it(claim, message):
    spec = {"id": "sim", "metric": "mini_neg_var", **claim}
    with pytest.raises(ValueError, match=f"claim 'sim': .*{message}"):
        evaluate_claim(spec, _simulation_rows(0.0))
