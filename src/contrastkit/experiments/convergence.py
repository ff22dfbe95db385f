"""Whether a training cell converged: a run that is still moving is not evidence.

The rule (version :data:`CONVERGENCE_RULE_VERSION`; docs/reproduction.md states it with its
reasons), the same for every kind of cell that trains:

- each *curve* the cell records per epoch (per step, for a cell whose training is counted in
  steps) has settled over the second half of training: the training loss (the epoch's mean),
  and every statistic of the representation the cell records along the way (a pretraining
  run's in-batch similarities, a hard-negative run's neural-collapse metrics), which includes
  the claim's own metric wherever the cell records it per epoch. A curve has settled when the
  change over the second half that a least-squares line through its second-half points gives
  (:func:`drift`), in *either* direction, is at most :data:`DRIFT_SHARE` of the curve's whole
  range over the run, or is within :func:`noise_bound` standard errors of no change (noise
  alone does not fail a run). The line uses every point of the half, never two single values,
  and needs at least :data:`MIN_POINTS` of them;
- the noise bound is corrected for the number of curves a run is judged on (Bonferroni): a run
  of ``m`` curves, none of which moves, fails by noise alone with a chance of at most
  :data:`RUN_ALPHA` in all, not ``RUN_ALPHA`` per curve. Each curve's bound is the two-sided
  Student's t quantile at ``RUN_ALPHA / m`` with the fit's degrees of freedom (exact for
  independent normal noise about a line, whatever the number of points). Holm's step-down
  procedure would name the same runs: its first step is this bound, and a run fails as soon as
  one curve does;
- a pretraining run's linear-probe top-1 (the exact L-BFGS probe) moved by at most
  :data:`ACCURACY_POINTS` points between the checkpoint at half of training and the end (a
  fixed bound on a deterministic function of the checkpoint, not a test against noise: it does
  not count among the ``m`` curves).

A cell records, beside ``converged`` (1.0 or 0.0), the rule's version (``convergence_rule``)
and each curve's drift in allowances (``drift_<curve>``: the fitted change divided by the
larger of the two allowances, signed; at most 1 in size when settled), so that every verdict
can be recomputed from the rows alone (:func:`judge_metrics`). Rows judged under another rule,
or recorded before the rule had a version, are judged again by this one
(:func:`rejudge_rows`): a record without the curves this rule needs is "not converged" (an
earlier rule's drifts, in that rule's allowances, are not this rule's and are dropped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats

from contrastkit.checks.scalars import check_count

#: The version of the rule stated in the module's text; every verdict records it.
CONVERGENCE_RULE_VERSION = 3
#: The metric that records the version of the rule a verdict followed.
RULE = "convergence_rule"
#: The metric that counts a run's curves the rule could not fit a line to (too few points in
#: the second half, or a value not finite); recorded only when some were, for a drift is then
#: not a number and a row holds finite values only.
UNFITTED = "unfitted_curves"
#: The largest change of the linear-probe top-1 (points) over the second half of training.
ACCURACY_POINTS = 1.0
#: The largest share of a curve's range over the whole run that its fitted change over the
#: second half may make, in either direction.
DRIFT_SHARE = 0.10
#: The chance, per run, that curves none of which moves fail the rule by noise alone: the
#: family-wise error rate of the run's curves, each tested at ``RUN_ALPHA / m``
#: (:func:`noise_bound`).
RUN_ALPHA = 0.05
#: The fewest points of the second half that a curve's line is fitted to.
MIN_POINTS = 5
#: The words of a verdict on a record that lacks the curves the rule judges.
LACKS = f"the record lacks the per-epoch curves convergence rule {CONVERGENCE_RULE_VERSION} needs"
#: The curves each kind of training cell records and the rule judges (``drift_<curve>``).
#: A pretraining run's curves; the last, the held-out nDCG@10 of a text-pair run with
#: ``online_probe=true``, only where the run records it (a run is judged on the curves it has).
PRETRAIN_CURVES = ("loss", "pos_sim_mean", "neg_sim_mean", "neg_sim_var", "online_ndcg10")
HARDNEG_CURVES = ("loss", "within_class_distance", "equinorm", "equiangularity",
                  "etf_distance", "zero_sum", "unit_norm", "equal_inner_product", "nc_gap")
TOY_CURVES = ("loss",)
#: LMCL's free embeddings (``lmcl_free``): the objective and the two covers the claims read.
FREE_CURVES = ("loss", "distance_cover", "angle_cover")
PROBE_INPUTS = ("half_linear_top1", "linear_top1")
#: What an earlier rule recorded beside its verdicts (kept in old rows, never judged).
RULE_1_INPUTS = ("first_loss", "half_loss", "first_train_loss", "half_train_loss", "train_loss")


def drift_name(curve: str) -> str:
    """The metric that records ``curve``'s drift: ``drift_<curve>``."""
    return f"drift_{curve}"


def curve_inputs(curves: Sequence[str]) -> tuple[str, ...]:
    """The rule's version, the drift metrics of ``curves`` and the count of curves not
    fitted."""
    return (RULE, *(drift_name(curve) for curve in curves), UNFITTED)


PRETRAIN_INPUTS = (*curve_inputs(PRETRAIN_CURVES), *PROBE_INPUTS)
HARDNEG_INPUTS = curve_inputs(HARDNEG_CURVES)
TOY_INPUTS = curve_inputs(TOY_CURVES)
FREE_INPUTS = curve_inputs(FREE_CURVES)
#: Every metric the rule (or an earlier one) records beside ``converged``; the reports do not
#: tabulate them unless a recipe names them.
INPUTS = tuple(dict.fromkeys(PRETRAIN_INPUTS + HARDNEG_INPUTS + TOY_INPUTS + FREE_INPUTS
                             + RULE_1_INPUTS))


def half_way(epochs: int) -> int:
    """The epoch (completed epochs) at half of a run of ``epochs``, at least 1."""
    return max(1, math.ceil(epochs / 2))


def noise_bound(curves: int, points: int) -> float:
    """How many standard errors from no change a curve's fitted change may lie and still be
    noise, for one of the ``curves`` curves a run is judged on, fitted to ``points`` points:
    the two-sided Student's t quantile at :data:`RUN_ALPHA` / ``curves`` (Bonferroni) with
    ``points - 2`` degrees of freedom, so that a run none of whose curves moves fails by noise
    alone with a chance of at most :data:`RUN_ALPHA`."""
    return _t_bound(check_count("curves", curves, 1), check_count("points", points, 3))


@lru_cache(maxsize=256)
def _t_bound(curves: int, points: int) -> float:
    """:func:`noise_bound` of checked arguments, computed once per pair."""
    return float(stats.t.ppf(1.0 - RUN_ALPHA / (2 * curves), points - 2))


def drift(epochs: Sequence[float], values: Sequence[float], curves: int = 1) -> float:
    """A curve's drift over the second half of training, in allowances (see the module's
    text): the change that the least-squares line through the points at and after
    :func:`half_way` of the last epoch gives over that half, divided by the larger of
    :data:`DRIFT_SHARE` x the curve's range (all its points) and :func:`noise_bound` (for a
    run judged on ``curves`` curves) x the change's standard error; signed (negative: it
    fell). NaN when the half has fewer than :data:`MIN_POINTS` points or a value is not finite
    (such a curve has not settled)."""
    x, y = np.asarray(epochs, dtype=float), np.asarray(values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"epochs and values must be two sequences of one length, got "
                         f"{x.shape} and {y.shape}")
    curves = check_count("curves", curves, 1)
    if len(x) == 0 or not np.isfinite(y).all():
        return math.nan
    second = x >= half_way(int(x[-1]))
    if second.sum() < MIN_POINTS:
        return math.nan
    xs, ys = x[second], y[second]
    span = float(xs[-1] - xs[0])
    centred = xs - xs.mean()
    slope = float(centred @ (ys - ys.mean()) / (centred @ centred))
    residuals = ys - ys.mean() - slope * centred
    se_slope = math.sqrt(float(residuals @ residuals) / (len(xs) - 2) / float(centred @ centred))
    change = slope * span
    allowance = max(DRIFT_SHARE * float(y.max() - y.min()),
                    noise_bound(curves, len(xs)) * se_slope * span)
    if allowance == 0.0:
        return 0.0 if change == 0.0 else math.copysign(math.inf, change)
    return float(change / allowance)


def settled(value: float) -> bool:
    """Whether a drift (:func:`drift`) is within the allowance (NaN is not)."""
    return abs(value) <= 1.0


def judge_curves(curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                 probe: tuple[float, float] | None = None) -> tuple[dict, str]:
    """The verdict on a finished run from its ``curves`` (name -> (epochs, values)) and, for a
    pretraining run, its ``probe`` (half-way and final linear top-1): the metrics
    ``converged``, :data:`RULE`, each fitted curve's ``drift_<curve>`` (its noise bound
    corrected for the number of ``curves``), :data:`UNFITTED` where a curve could not be
    fitted, and the probe's ``half_linear_top1``; and why, in words. A run without a ``loss``
    curve, or with a curve not fitted, is not converged."""
    metrics = {RULE: float(CONVERGENCE_RULE_VERSION)}
    reasons = [] if "loss" in curves else ["no training-loss curve"]
    unfitted = 0
    for name, (epochs, values) in curves.items():
        value = drift(epochs, values, len(curves))
        if math.isnan(value):
            unfitted += 1
            reasons.append(f"{name}: too few points (under {MIN_POINTS}) or a non-finite "
                           f"value in the second half")
            continue
        metrics[drift_name(name)] = value
        if not settled(value):
            reasons.append(f"{name} {'rose' if value > 0 else 'fell'} {abs(value):.2f} "
                           f"allowances over the second half")
    if unfitted:
        metrics[UNFITTED] = float(unfitted)
    if probe is not None:
        metrics["half_linear_top1"] = probe[0]
        moved = probe[1] - probe[0]
        if not abs(moved) <= ACCURACY_POINTS:
            reasons.append(f"linear top-1 moved {moved:+.2f} points in the second half")
    return {"converged": 0.0 if reasons else 1.0, **metrics}, "; ".join(reasons) or "converged"


def untrained() -> dict:
    """The verdict on a cell that trains nothing (nothing to converge): ``converged`` 1.0 and
    the rule's version, no curves."""
    return {"converged": 1.0, RULE: float(CONVERGENCE_RULE_VERSION)}


def epoch_curves(records: Sequence[Mapping], names: Sequence[str],
                 epoch_key: str = "epoch") -> dict[str, tuple[list, list]]:
    """Name -> (epochs, values) of each of ``names`` that the per-epoch ``records`` (mappings
    with ``epoch_key``) hold."""
    return {name: ([record[epoch_key] for record in records if name in record],
                   [record[name] for record in records if name in record])
            for name in names if any(name in record for record in records)}


def judge_metrics(metrics: Mapping[str, float]) -> float | None:
    """``converged`` (1.0 or 0.0) recomputed from a run's recorded metrics by this rule: 0.0
    for a record of another rule's version or without one, with a curve not fitted, or
    without the loss's drift; ``None`` when the record is of this rule and holds no curves at
    all (a cell that trains nothing, such as K-means on the raw points)."""
    if metrics.get(RULE) != CONVERGENCE_RULE_VERSION or metrics.get(UNFITTED, 0.0) > 0:
        return 0.0
    drifts = [value for name, value in metrics.items() if name.startswith("drift_")]
    if not drifts:
        return None
    if drift_name("loss") not in metrics or not all(settled(value) for value in drifts):
        return 0.0
    if all(name in metrics for name in PROBE_INPUTS):
        moved = metrics["linear_top1"] - metrics["half_linear_top1"]
        if not abs(moved) <= ACCURACY_POINTS:
            return 0.0
    return 1.0


def why_not(metrics: Mapping[str, float]) -> str | None:
    """:data:`LACKS` for a run whose record (its :data:`INPUTS`, ``metrics``) is of another
    rule or lacks the loss's curve (the words a claim gives for it), else ``None`` (also for a
    run that records none of them: nothing to say why)."""
    if metrics and (metrics.get(RULE) != CONVERGENCE_RULE_VERSION
                    or drift_name("loss") not in metrics):
        return LACKS
    return None


def rejudge_rows(rows: Sequence[dict]) -> list[dict]:
    """The tidy ``rows`` with each run (cell and seed) that was judged under another version
    of the rule or none judged again by this one: its ``converged`` is 0.0, for its record
    lacks the curves this rule needs (:func:`judge_metrics`), :data:`RULE` records the
    version, and the drifts an earlier rule recorded (in that rule's allowances, which this
    rule's verdict does not follow from) and its count of curves not fitted are dropped. Runs
    of this version, and rows of runs never judged (the simulations), are left as they are."""
    runs: dict[tuple, dict] = {}
    for row in rows:
        runs.setdefault((row["cell"], row["seed"]), {})[row["metric"]] = row["value"]
    stale = {run for run, metrics in runs.items()
             if "converged" in metrics and metrics.get(RULE) != CONVERGENCE_RULE_VERSION}
    version = float(CONVERGENCE_RULE_VERSION)
    out = []
    for row in rows:
        run = (row["cell"], row["seed"])
        if run not in stale:
            out.append(row)
        elif row["metric"] == "converged":
            out.append({**row, "value": judge_metrics(runs[run])})
            if RULE not in runs[run]:
                out.append({**row, "metric": RULE, "value": version})
        elif row["metric"] == RULE:
            out.append({**row, "value": version})
        elif not row["metric"].startswith("drift_") and row["metric"] != UNFITTED:
            out.append(row)
    return out
