"""The claims section of ``report.md``: every claim's verdict with its raw and family-wise
adjusted p-value, the tally, and what each claim compared."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from contrastkit.experiments.claim_verdict import Verdict
from contrastkit.experiments.convergence import CONVERGENCE_RULE_VERSION
from contrastkit.experiments.report_markdown import MISSING, inline, row
from contrastkit.experiments.stats import INCONCLUSIVE, NOT_CONVERGED, NOT_SUPPORTED, SUPPORTED

#: What the claims section says of its tests (before the table).
EXPLAINED = (
    "Each verdict is computed from the per-seed values: a one-sided t-test over seeds in the "
    "claimed direction, or an exact check of every value for the simulations and the bounds. "
    "A comparison is a paired test of the per-seed differences, against the minimum effect the "
    "claim states where it states one (a claim that something is emptied must show more than a "
    "small fall); a claim at every level of an axis (for_each) is one paired test per level; a "
    "trend is monotone (one paired test per adjacent step of the levels) or end to end (the "
    "last level against the first, each step that goes significantly the other way named "
    "below), as its claim states. The tests of one claim over several levels or steps are "
    "Holm-adjusted across them, in each direction. Raw p: the claim's own one-sided p (so "
    "adjusted, for a claim over several levels or steps). Adjusted p: the raw p adjusted by "
    "Holm's step-down procedure across all the t-test claims of this report (the family; the "
    "exact checks are not in it), so that the chance of any false verdict among them is at "
    "most alpha. **The verdict is judged with the adjusted p:** supported if it is below "
    "alpha, not supported if the opposite direction's adjusted p is, else inconclusive. A "
    "claim whose values include a run that did not converge (convergence rule "
    f"{CONVERGENCE_RULE_VERSION}, stated in docs/reproduction.md) is not converged, whatever "
    "its test says. Effect: the mean paired difference (of the weakest level or step of a claim "
    "over several; the largest deviation of an exact check); d_z: Cohen's effect size; MDE, "
    "beside an inconclusive test: the minimum detectable effect, the smallest true effect "
    "that the one-sided test detects with power 0.8 given the observed spread and seeds, at "
    "alpha over the number of the family's claims (and of the claim's levels or steps): "
    "Holm's strictest threshold.")


def claims_section(verdicts: Sequence[Verdict]) -> str:
    """``## Claims``: the table, the tally and each claim's detail."""
    if not verdicts:
        return "## Claims\n\nThe recipe states no claim."
    header = ["claim", "statement", "verdict", "effect", "d_z", "raw p", "adjusted p", "MDE",
              "n"]
    lines = ["## Claims", "", EXPLAINED, "", _family(verdicts), "", row(header),
             row(["---"] * len(header))]
    lines += [row([f"`{v.claim_id}`", v.text or MISSING, f"**{v.verdict}**", _number(v.effect),
                   _number(v.effect_size), _number(v.p_value), _number(v.p_adjusted),
                   _number(v.mde), v.n]) for v in verdicts]
    lines += ["", tally(verdicts), "", "What each claim compared:", ""]
    lines += [f"- `{v.claim_id}`: {inline(v.detail)}" for v in verdicts]
    return "\n".join(lines)


def _family(verdicts: Sequence[Verdict]) -> str:
    """How many claims the family holds."""
    members = sum(v.family > 0 for v in verdicts)
    exact = len(verdicts) - members
    return (f"The family: {members} t-test claim{'s' if members != 1 else ''}"
            + (f"; {exact} exact check{'s' if exact != 1 else ''} outside it." if exact
               else "."))


def tally(verdicts: Sequence[Verdict]) -> str:
    """``2 supported, 1 inconclusive, 1 not converged.``: each verdict's count, in a fixed
    order (any other verdict after them)."""
    order = [SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_CONVERGED]
    counts = Counter(v.verdict for v in verdicts)
    known = [verdict for verdict in order if counts[verdict]]
    others = sorted(verdict for verdict in counts if verdict not in order)
    return "Verdicts: " + ", ".join(f"{counts[verdict]} {verdict}"
                                    for verdict in [*known, *others]) + "."


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.3g}"
