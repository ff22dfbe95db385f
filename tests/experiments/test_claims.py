"""Every claim test on synthetic rows whose verdict is known: a clear effect in the claimed
direction (supported), a clear effect against it (not supported), noise (inconclusive); the
per-level claims under Holm's adjustment, the trend over all levels and the minimum detectable
effect checked against scipy and numpy; runs that did not converge."""

from __future__ import annotations

import math
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from contrastkit.experiments.claims import evaluate_claim, evaluate_claims
from contrastkit.experiments.stats import holm_adjust, minimum_detectable_effect
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


# --- per-level claims: Holm's adjustment across the levels -------------------------------------

LEVELS = [16, 32, 64, 128, 256]
STRONG = [-0.050, -0.052, -0.049, -0.051, -0.048]   # lower at every seed: p ~ 1e-9
# against the claim at four seeds of five: the opposite one-sided p is 0.036
WEAK_AGAINST = [0.02, 0.01, 0.03, -0.005, 0.015]
WEAK_FOR = [-x for x in WEAK_AGAINST]                # for the claim: p = 0.036


def _difference_rows(differences: dict, metric="neg_sim_var"):
    """``metric`` over batch_size x vrns; at each batch size and seed, vrns=30.0 is vrns=0.0
    plus ``differences[batch_size][seed]`` exactly (both share a seeded draw)."""
    seeds = len(next(iter(differences.values())))

    def value(axes, seed):
        shared = 0.3 + 0.01 * _jitter({"batch_size": axes["batch_size"]}, seed)
        return shared + (differences[axes["batch_size"]][seed] if axes["vrns"] == 30.0 else 0)

    return make_rows({"batch_size": list(differences), "vrns": [0.0, 30.0]}, seeds,
                     {metric: value})


def _holm_from_scipy(differences: dict, direction: str, alpha=0.05):
    """The verdict and adjusted p-values of the per-level claim, from scipy's paired tests."""
    claimed, opposite = ("less", "greater") if direction == "lower" else ("greater", "less")
    p = [stats.ttest_1samp(d, 0.0, alternative=claimed).pvalue for d in differences.values()]
    q = [stats.ttest_1samp(d, 0.0, alternative=opposite).pvalue for d in differences.values()]
    p_adjusted, q_adjusted = holm_adjust(p), holm_adjust(q)
    verdict = ("supported" if (p_adjusted < alpha).all() else
               "not supported" if (q_adjusted < alpha).any() else "inconclusive")
    return verdict, p, p_adjusted, q_adjusted


def test_one_contradiction_at_p_0_036_among_five_levels_is_not_a_verdict():
    """Without a correction one level's opposite p = 0.036 made the claim not supported; Holm
    multiplies the smallest of five p-values by 5: 0.18, so the claim is inconclusive."""
    differences = {16: STRONG, 32: STRONG, 64: WEAK_AGAINST, 128: STRONG, 256: STRONG}
    result = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"},
                            _difference_rows(differences))
    verdict, p, p_adjusted, q_adjusted = _holm_from_scipy(differences, "lower")
    raw_opposite = stats.ttest_1samp(WEAK_AGAINST, 0.0, alternative="greater").pvalue
    assert raw_opposite == pytest.approx(0.0364, abs=1e-4) and q_adjusted[2] > 0.05
    assert verdict == result.verdict == "inconclusive"
    assert "batch_size=64" in result.detail.split("weakest level, ")[1][:14]
    assert result.p_value == pytest.approx(p_adjusted[2], rel=1e-9)
    assert result.effect == pytest.approx(np.mean(WEAK_AGAINST), abs=1e-12)
    for batch, adjusted, against in zip(LEVELS, p_adjusted, q_adjusted, strict=True):
        assert (f"batch_size={batch}: lower " in result.detail
                and f"Holm p {adjusted:.3g}, Holm opposite p {against:.3g}" in result.detail)


def test_five_levels_each_at_p_0_036_are_not_enough_for_every_level():
    """Each level alone is supported (p = 0.036); across five, Holm's p is 0.18."""
    differences = {batch: WEAK_FOR[k:] + WEAK_FOR[:k] for k, batch in enumerate(LEVELS)}
    result = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"},
                            _difference_rows(differences))
    assert result.detail.count("lower supported alone") == 5
    assert result.verdict == "inconclusive"
    assert result.p_value == pytest.approx(5 * 0.0364, abs=5e-4)


def test_strong_effects_at_every_level_survive_holm():
    differences = dict.fromkeys(LEVELS, STRONG)
    result = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"},
                            _difference_rows(differences))
    assert result.verdict == "supported" and result.p_value < 1e-6 and math.isnan(result.mde)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_the_per_level_verdict_is_holms_rule_on_scipys_p_values(seed, direction):
    rng = np.random.default_rng(seed)
    differences = {batch: (rng.choice([-0.03, 0.0, 0.03]) + rng.normal(0, 0.02, size=4)
                           ).tolist() for batch in LEVELS[:rng.integers(2, 6)]}
    claim = {**VRNS_LOWERS, "test": direction, "for_each": "batch_size", "alpha": 0.1}
    result = evaluate_claim(claim, _difference_rows(differences))
    verdict, p, p_adjusted, _ = _holm_from_scipy(differences, direction, alpha=0.1)
    assert result.verdict == verdict
    assert result.p_value == pytest.approx(p_adjusted[int(np.argmax(p))], rel=1e-9)


def _loss_batch_rows(shifts: dict, noise=0.002):
    """linear_top1 over loss x batch_size x vrns: VRNS adds ``shifts[(loss, batch)]``."""
    def value(axes, seed):
        shift = shifts[(axes["loss"], axes["batch_size"])] if axes["vrns"] == 30.0 else 0.0
        return 0.7 + shift + noise * _jitter(axes, seed)
    return make_rows({"loss": ["simclr", "dcl"], "batch_size": BATCHES, "vrns": [0.0, 30.0]},
                     SEEDS, {"linear_top1": value})


VRNS_HIGHER = {"id": "vrns_higher", "metric": "linear_top1", "test": "higher",
               "treatment": {"vrns": 30.0}, "control": {"vrns": 0.0}}


def test_for_each_over_two_axes_tests_every_combination():
    """VRNS gains 6.8 points everywhere but loses 4.0 for DCL at batch 64: averaged over the
    losses batch 64 still gains; per loss and batch size the loss shows."""
    shifts = {(loss, batch): 0.068 for loss in ("simclr", "dcl") for batch in BATCHES}
    shifts[("dcl", 64)] = -0.040
    rows = _loss_batch_rows(shifts)
    assert evaluate_claim({**VRNS_HIGHER, "for_each": "batch_size"}, rows).verdict == "supported"
    both = evaluate_claim({**VRNS_HIGHER, "for_each": ["loss", "batch_size"]}, rows)
    assert both.verdict == "not supported"
    assert "6 paired tests" in both.detail and "at every loss x batch_size" in both.detail
    for loss in ("simclr", "dcl"):
        for batch in BATCHES:
            assert f"loss={loss}, batch_size={batch}: higher" in both.detail
    assert both.effect == pytest.approx(-0.040, abs=0.005)
    assert "the weakest level, loss=dcl, batch_size=64" in both.detail


def test_for_each_one_axis_as_a_name_or_a_list_is_the_same_claim():
    rows = _variance_rows(_at_batch({16: -0.05, 64: 0.0, 256: -0.05}), 0.01)
    one = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"}, rows)
    listed = evaluate_claim({**VRNS_LOWERS, "for_each": ["batch_size"]}, rows)
    assert one == listed


# --- the minimum detectable effect beside an inconclusive verdict ------------------------------


def test_an_inconclusive_comparison_reports_its_minimum_detectable_effect():
    rows = _variance_rows(_vrns(0.0), 0.02)
    result = evaluate_claim(VRNS_LOWERS, rows)
    assert result.verdict == "inconclusive"
    by_seed = {}
    for row in rows:
        by_seed.setdefault(row["seed"], {}).setdefault(row["vrns"], []).append(row["value"])
    differences = [np.mean(v[30.0]) - np.mean(v[0.0]) for v in by_seed.values()]
    expected = minimum_detectable_effect(np.std(differences, ddof=1), SEEDS, 0.05)
    assert result.mde == pytest.approx(expected, rel=1e-9)
    assert f"minimum detectable effect is {expected:.3g}" in result.detail
    assert "power 0.8" in result.detail


@pytest.mark.parametrize("shift", [-0.05, 0.05])
def test_a_decided_comparison_has_no_minimum_detectable_effect(shift):
    result = evaluate_claim(VRNS_LOWERS, _variance_rows(_vrns(shift), 0.002))
    assert result.verdict != "inconclusive" and math.isnan(result.mde)
    assert "minimum detectable" not in result.detail


def test_an_inconclusive_per_level_claim_reports_the_largest_mde_at_alpha_over_m():
    differences = {16: STRONG, 32: STRONG, 64: WEAK_AGAINST, 128: STRONG, 256: STRONG}
    result = evaluate_claim({**VRNS_LOWERS, "for_each": "batch_size"},
                            _difference_rows(differences))
    expected = max(minimum_detectable_effect(np.std(d, ddof=1), 5, 0.05 / 5)
                   for d in differences.values())
    assert result.verdict == "inconclusive"
    assert result.mde == pytest.approx(expected, rel=1e-6)
    assert "alpha / (5 x 1) = 0.01" in result.detail


@pytest.mark.parametrize("test", ["less_spread", "larger_gain"])
def test_inconclusive_spread_and_gain_report_a_minimum_detectable_effect(test):
    if test == "less_spread":
        result = evaluate_claim(LESS_SPREAD, _accuracy_rows(0.1, 0.1, 0.03))
    else:
        result = evaluate_claim(LARGER_GAIN, _gain_rows(0.03, 0.03, 0.02))
    assert result.verdict == "inconclusive" and result.mde > 0
    assert "minimum detectable effect" in result.detail


def test_one_seed_has_no_minimum_detectable_effect():
    rows = [row for row in _variance_rows(_vrns(0.0), 0.02) if row["seed"] == 0]
    assert math.isnan(evaluate_claim(VRNS_LOWERS, rows).mde)


FALLS_WITH_BATCH = {"id": "falls", "metric": "neg_sim_var", "test": "decreasing",
                    "along": "batch_size", "trend": "monotone", "where": {"vrns": 0.0}}


@pytest.mark.parametrize(("slope", "noise", "verdict"), [
    (0.0, 0.002, "supported"), (0.02, 0.002, "not supported"), (0.01, 0.05, "inconclusive")])
def test_decreasing_where(slope, noise, verdict):
    """The base variance falls by 0.01 per doubling of the batch; ``slope`` adds to that."""
    rows = _variance_rows(lambda axes: slope * math.log2(axes["batch_size"]), noise)
    result = evaluate_claim(FALLS_WITH_BATCH, rows)
    assert result.verdict == verdict
    assert "monotone: every adjacent step" in result.detail


def _per_seed_level_means(rows, metric, along, where):
    """seed -> [mean over the other axes at each level of ``along``], from the rows."""
    table = {}
    for row in rows:
        if row["metric"] == metric and all(row[a] == v for a, v in where.items()):
            table.setdefault(row["seed"], {}).setdefault(row[along], []).append(row["value"])
    return {seed: [np.mean(v[level]) for level in sorted(v)] for seed, v in table.items()}


def _u_shape_rows(rise):
    """neg_sim_var over five batch sizes: falls by 0.02 a step up to 128, then moves by
    ``rise`` to 256 (a U-shape when ``rise`` > 0), small noise."""
    def value(axes, seed):
        rank = LEVELS.index(axes["batch_size"])
        base = 0.3 - 0.02 * min(rank, 3) + (rise if rank == 4 else 0.0)
        return base + 0.002 * _jitter(axes, seed)
    return make_rows({"batch_size": LEVELS, "loss": ["simclr", "dcl"]}, SEEDS,
                     {"neg_sim_var": value})


@pytest.mark.parametrize("rise", [-0.02, 0.015, 0.0])
def test_monotone_is_holm_over_scipys_paired_tests_of_the_adjacent_steps(rise):
    """Each adjacent step is scipy's paired test of the per-seed level means (averaged over
    the other axes); Holm across the four steps; the weakest step is reported."""
    rows = _u_shape_rows(rise)
    result = evaluate_claim({**FALLS_WITH_BATCH, "where": {}}, rows)
    means = _per_seed_level_means(rows, "neg_sim_var", "batch_size", {})
    table = np.array([means[seed] for seed in sorted(means)])
    claimed = [stats.ttest_rel(table[:, i + 1], table[:, i], alternative="less").pvalue
               for i in range(4)]
    opposite = [stats.ttest_rel(table[:, i + 1], table[:, i], alternative="greater").pvalue
                for i in range(4)]
    adjusted, adjusted_opposite = holm_adjust(claimed), holm_adjust(opposite)
    assert result.p_value == pytest.approx(adjusted.max(), rel=1e-8)
    assert result.verdict == ("supported" if adjusted.max() < 0.05 else "not supported"
                              if adjusted_opposite.min() < 0.05 else "inconclusive")
    assert result.verdict == {-0.02: "supported", 0.015: "not supported",
                              0.0: "inconclusive"}[rise]


def test_end_to_end_tests_the_last_level_against_the_first_and_reports_a_u_shape():
    """A fall from 16 to 128 and a rise to 256 that keeps it below 16: end to end it falls
    (scipy's paired test of the ends), and the detail names the step that rises; read as
    monotone, the same rows do not support the claim."""
    rows = _u_shape_rows(0.015)
    end_to_end = {**FALLS_WITH_BATCH, "where": {}, "trend": "end_to_end"}
    result = evaluate_claim(end_to_end, rows)
    means = _per_seed_level_means(rows, "neg_sim_var", "batch_size", {})
    last, first = ([means[seed][k] for seed in sorted(means)] for k in (-1, 0))
    reference = stats.ttest_rel(last, first, alternative="less").pvalue
    assert result.p_value == pytest.approx(reference, rel=1e-8)
    assert result.verdict == "supported"
    assert "not monotone: 1 of the 4 adjacent steps" in result.detail
    assert "batch_size 128 to 256" in result.detail
    assert evaluate_claim({**end_to_end, "trend": "monotone"}, rows).verdict == "not supported"


def test_a_monotone_fall_names_no_step_against_it():
    result = evaluate_claim({**FALLS_WITH_BATCH, "where": {}, "trend": "end_to_end"},
                            _u_shape_rows(-0.02))
    assert "no adjacent step goes significantly against the claim" in result.detail


@pytest.mark.parametrize(("trend", "message"), [
    (None, "test 'decreasing' needs 'trend'"),
    ("slope", "trend must be one of")])
def test_a_trend_states_how_it_reads_falls_with(trend, message):
    claim = {key: value for key, value in FALLS_WITH_BATCH.items() if key != "trend"}
    if trend:
        claim["trend"] = trend
    with pytest.raises(ValueError, match=message):
        evaluate_claim(claim, _u_shape_rows(-0.02))


# --- a minimum effect, and the family of a report's claims --------------------------------------


@pytest.mark.parametrize(("share", "verdict"), [(0.003, "not supported"), (0.8, "supported")])
def test_a_claim_that_empties_must_show_its_minimum_effect(share, verdict):
    """VRNS lowers the variance by ``share`` of its value: a fall of 0.3 % (LMCL's 0.3536 ->
    0.3524) is significant, but not "at least half" (min_share 0.5)."""
    def value(axes, seed):
        base = 0.35 + 0.001 * _jitter({"batch_size": axes["batch_size"]}, seed)
        return base * (1 - share) if axes["vrns"] == 30.0 else base
    rows = make_rows({"batch_size": BATCHES, "vrns": [0.0, 30.0]}, SEEDS,
                     {"neg_sim_var": value})
    plain = evaluate_claim(VRNS_LOWERS, rows)
    assert plain.verdict == "supported"
    emptied = evaluate_claim({**VRNS_LOWERS, "min_share": 0.5}, rows)
    assert emptied.verdict == verdict
    assert emptied.effect == pytest.approx(plain.effect, rel=1e-12)  # the plain difference
    assert "minimum effect" in emptied.detail


def test_an_absolute_minimum_effect_shifts_the_test():
    rows = _variance_rows(_vrns(-0.05), 0.002)
    assert evaluate_claim({**VRNS_LOWERS, "min_effect": 0.03}, rows).verdict == "supported"
    assert evaluate_claim({**VRNS_LOWERS, "min_effect": 0.07}, rows).verdict == "not supported"


@pytest.mark.parametrize(("extra", "message"), [
    ({"min_effect": 0.1, "min_share": 0.5}, "not both"),
    ({"min_share": 1.5}, "min_share must be in"),
    ({"min_effect": -1.0}, "min_effect")])
def test_a_bad_minimum_effect_is_an_error_naming_it(extra, message):
    with pytest.raises(ValueError, match=message):
        evaluate_claim({**VRNS_LOWERS, **extra}, _variance_rows(_vrns(-0.05), 0.002))


def test_the_report_judges_with_holm_across_its_t_test_claims():
    """Three t-test claims and an exact check: the adjusted p-values are Holm's across the
    three (the exact check is not in the family), and two claims whose own p (0.036) pass
    alone do not once adjusted (0.072)."""
    rows = _difference_rows({16: WEAK_FOR, 64: WEAK_FOR, 256: STRONG})
    claims = [{**VRNS_LOWERS, "id": "weak", "where": {"batch_size": 16}},
              {**VRNS_LOWERS, "id": "also_weak", "where": {"batch_size": 64}},
              {**VRNS_LOWERS, "id": "strong", "where": {"batch_size": 256}},
              {"id": "bounded", "metric": "neg_sim_var", "test": "at_least", "target": 0.0}]
    verdicts = evaluate_claims(SimpleNamespace(claims=claims), rows)
    alone = [evaluate_claim(claim, rows) for claim in claims]
    raw = [v.p_value for v in alone[:3]]
    assert [v.p_value for v in verdicts[:3]] == pytest.approx(raw, rel=1e-12)
    assert [v.p_adjusted for v in verdicts[:3]] == pytest.approx(holm_adjust(raw).tolist(),
                                                                 rel=1e-12)
    assert [v.verdict for v in alone[:2]] == ["supported", "supported"]
    assert [v.verdict for v in verdicts] == ["inconclusive", "inconclusive", "supported",
                                             "supported"]
    assert math.isnan(verdicts[3].p_adjusted) and verdicts[3].family == 0
    assert [v.family for v in verdicts[:3]] == [3, 3, 3]


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
    ({"for_each": ["batch_size", "seed"]}, "for_each names 'seed', not an axis"),
    ({"for_each": ["batch_size", "batch_size"]}, "for_each repeats an axis"),
    ({"for_each": "vrns"}, "for_each axis 'vrns' is also fixed by treatment"),
    ({"for_each": "batch_size", "where": {"batch_size": 16}}, "'batch_size' is also fixed by"),
    ({"for_each": []}, "for_each must be an axis name or a non-empty list"),
    ({"for_each": 3}, "for_each must be an axis name"),
])
def test_a_bad_claim_is_an_error_naming_it(change, message):
    rows = _variance_rows(_vrns(-0.05), 0.002)
    with pytest.raises(ValueError, match=f"claim 'vrns_lowers': .*{message}"):
        evaluate_claim({**VRNS_LOWERS, **change}, rows)


@pytest.mark.parametrize(("claim", "message"), [
    ({"test": "close", "target": "theory_mini", "tolerance": 0.1}, "metric 'theory_mini' is not"),
    ({"test": "close", "target": 0.1}, "needs 'tolerance'"),
    ({"test": "close", "target": 0.1, "tolerance": -1}, "tolerance must be >= 0"),
    ({"test": "decreasing", "along": "m", "trend": "monotone", "where": {"m": 2}},
     "along 'm' needs >= 2 levels"),
])
def test_a_bad_exact_or_trend_claim_is_an_error_naming_it(claim, message):
    spec = {"id": "sim", "metric": "mini_neg_var", **claim}
    with pytest.raises(ValueError, match=f"claim 'sim': .*{message}"):
        evaluate_claim(spec, _simulation_rows(0.0))


# --- runs that did not converge ----------------------------------------------------------------


def _with_converged(rows, failed=(), missing=()):
    """``rows`` and a ``converged`` row per cell and seed: 0.0 for the (cell, seed) of
    ``failed``, none for those of ``missing``, else 1.0."""
    runs = {(row["cell"], row["seed"]): row for row in rows}
    return rows + [{**row, "metric": "converged", "value": 0.0 if run in failed else 1.0}
                   for run, row in runs.items() if run not in missing]


def test_a_claim_on_a_run_that_did_not_converge_is_not_converged():
    rows = _variance_rows(_vrns(-0.05), 0.002)
    plain = evaluate_claim(VRNS_LOWERS, rows)
    result = evaluate_claim(VRNS_LOWERS, _with_converged(rows, {("batch_size=64,vrns=0.0", 2),
                                                                ("batch_size=64,vrns=0.0", 4),
                                                                ("batch_size=16,vrns=30.0", 1)}))
    assert plain.verdict == "supported" and result.verdict == "not converged"
    # the statistics are still there, for information
    assert (result.effect, result.effect_size, result.p_value, result.n) == (
        plain.effect, plain.effect_size, plain.p_value, plain.n)
    assert "batch_size=64,vrns=0.0 (seeds 2, 4: converged = 0)" in result.detail
    assert "batch_size=16,vrns=30.0 (seed 1: converged = 0)" in result.detail
    assert "3 of the 30 cell x seed runs" in result.detail
    assert result.detail.endswith(plain.detail)
    assert ("the claim's own test on these values (before the report's adjustment) reads "
            "supported") in result.detail


def test_every_run_converged_changes_nothing():
    rows = _variance_rows(_vrns(0.0), 0.02)
    assert evaluate_claim(VRNS_LOWERS, _with_converged(rows)) == evaluate_claim(VRNS_LOWERS,
                                                                                 rows)


@pytest.mark.parametrize(("claim", "failed"), [
    ({**VRNS_LOWERS, "where": {"batch_size": 16}}, "batch_size=256,vrns=30.0"),
    (FALLS_WITH_BATCH, "batch_size=64,vrns=30.0"),           # where: vrns=0.0
    ({**VRNS_LOWERS, "treatment": {"batch_size": 256, "vrns": 0.0},      # neither treatment
      "control": {"batch_size": 16, "vrns": 0.0}}, "batch_size=64,vrns=0.0"),  # nor control
])
def test_a_run_the_test_does_not_use_does_not_count(claim, failed):
    rows = _variance_rows(_vrns(-0.05), 0.002)
    flagged = _with_converged(rows, {(failed, seed) for seed in range(SEEDS)})
    assert evaluate_claim(claim, flagged) == evaluate_claim(claim, rows)


@pytest.mark.parametrize("claim", [
    {**VRNS_LOWERS, "for_each": "batch_size"}, FALLS_WITH_BATCH,
    {**FALLS_WITH_BATCH, "test": "increasing", "where": {}},
])
def test_per_level_and_trend_claims_see_every_level_they_use(claim):
    rows = _variance_rows(_vrns(-0.05), 0.002)
    result = evaluate_claim(claim, _with_converged(rows, {("batch_size=256,vrns=0.0", 3)}))
    assert result.verdict == "not converged"
    assert "batch_size=256,vrns=0.0 (seed 3: converged = 0)" in result.detail


def test_spread_and_gain_see_treatment_and_control():
    spread = _accuracy_rows(0.01, 0.2, 0.005)
    assert evaluate_claim(LESS_SPREAD, _with_converged(
        spread, {("temperature=2.0,vrns=30.0", 0)})).verdict == "not converged"
    gain = _gain_rows(0.05, 0.01, 0.003)
    assert evaluate_claim(LARGER_GAIN, _with_converged(
        gain, {("loss=dcl,batch_size=256,vrns=0.0", 0)})).verdict == "not converged"
    # the gain compares the smallest and the largest batch only
    assert evaluate_claim(LARGER_GAIN, _with_converged(
        gain, {("loss=dcl,batch_size=64,vrns=0.0", 0)})).verdict == "supported"


def test_a_run_without_a_converged_record_counts_as_not_converged():
    rows = _variance_rows(_vrns(-0.05), 0.002)
    result = evaluate_claim(VRNS_LOWERS, _with_converged(rows, missing={
        ("batch_size=16,vrns=0.0", 0)}))
    assert result.verdict == "not converged"
    assert "batch_size=16,vrns=0.0 (seed 0: no converged record)" in result.detail


def test_a_run_that_diverged_to_nan_is_not_converged_not_an_error():
    rows = _variance_rows(_vrns(-0.05), 0.002)
    for row in rows:
        if row["cell"] == "batch_size=64,vrns=30.0" and row["seed"] == 1:
            row["value"] = math.nan
    with pytest.raises(ValueError, match="claim 'vrns_lowers': neg_sim_var is not finite in "
                                         "batch_size=64,vrns=30.0 seed 1"):
        evaluate_claim(VRNS_LOWERS, rows)
    result = evaluate_claim(VRNS_LOWERS, _with_converged(rows, {("batch_size=64,vrns=30.0",
                                                                  1)}))
    assert result.verdict == "not converged"
    assert math.isnan(result.effect) and math.isnan(result.p_value)
    assert "could not be computed" in result.detail and "seed 1: converged = 0" in result.detail


def test_an_exact_claim_on_a_run_that_did_not_converge_is_not_converged():
    claim = {"id": "optimum", "metric": "full_neg_mean", "test": "close",
             "target": "theory_full_neg_mean", "tolerance": 1e-4}
    rows = _simulation_rows(1e-6)
    result = evaluate_claim(claim, _with_converged(rows, {("m=4", 0)}))
    assert result.verdict == "not converged" and "m=4 (seed 0: converged = 0)" in result.detail
    assert evaluate_claim({**claim, "where": {"m": 2}}, _with_converged(rows, {("m=4", 0)})
                          ).verdict == "supported"
