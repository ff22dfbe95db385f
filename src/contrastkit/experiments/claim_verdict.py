"""The :class:`Verdict` of a claim, and the family-wise adjustment across a report's claims
(:func:`adjust_family`): each claim's own one-sided p-value is adjusted by Holm's step-down
procedure across every claim of the report that is a t-test, and the verdict is judged with
the adjusted p-value, so that the chance of any false "supported" (or "not supported") among
the report's claims is at most alpha."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from contrastkit.experiments.stats import (
    INCONCLUSIVE,
    NOT_CONVERGED,
    NOT_SUPPORTED,
    SUPPORTED,
    holm_adjust,
)

#: The tests that are exact checks of every value (no p-value, not in the family).
EXACT_TESTS = ("close", "at_least", "at_most")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of one claim: ``effect`` is the mean paired difference (the weakest step's
    or level's, for a claim over several; the deviation of an exact claim), ``effect_size``
    Cohen's d_z (NaN for exact claims), ``p_value`` the claim's own one-sided p-value in the
    claimed direction (Holm-adjusted across its levels or steps, for a claim over several;
    NaN for exact claims) and ``p_opposite`` the same in the opposite direction (the smallest
    over the levels or steps), ``p_adjusted`` ``p_value`` adjusted by Holm across the report's
    t-test claims (:func:`adjust_family`), which the verdict is judged with; ``n`` the number
    of seeds paired (values compared, for exact claims), ``detail`` what was compared, ``mde``
    the minimum detectable effect beside an inconclusive t-test (NaN where it does not apply)
    and ``mde_note`` the sentence that explains it (added to the detail beside an
    inconclusive verdict); ``family`` the number of t-test claims adjusted together (0 for an
    exact check, which is not in the family)."""

    claim_id: str
    text: str
    verdict: str
    effect: float
    effect_size: float
    p_value: float
    n: int
    detail: str
    mde: float = math.nan
    p_opposite: float = math.nan
    p_adjusted: float = math.nan
    alpha: float = 0.05
    mde_note: str = ""
    family: int = 0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def is_t_test(test: str) -> bool:
    """Whether a claim's test is a t-test over seeds (a member of the report's family)."""
    return test not in EXACT_TESTS


def adjust_family(verdicts: Sequence[Verdict], tests: Sequence[str]) -> list[Verdict]:
    """The verdicts judged with Holm's adjustment across the family of the t-test claims
    (``tests[i]`` is the test of ``verdicts[i]``): ``p_adjusted`` is Holm's adjusted
    ``p_value``, and the same adjustment of ``p_opposite`` decides "not supported"; a claim
    with no p-value (fewer than 2 seeds) counts as p = 1. A t-test verdict is then
    ``supported`` if its adjusted p is below its alpha, ``not supported`` if its adjusted
    opposite p is, else ``inconclusive`` (with its minimum detectable effect); ``not
    converged`` stays so. Exact checks keep their verdict and have no adjusted p."""
    members = [index for index, test in enumerate(tests) if is_t_test(test)]
    claimed = holm_adjust([p_or_one(verdicts[i].p_value) for i in members])
    opposite = holm_adjust([p_or_one(verdicts[i].p_opposite) for i in members])
    judged = list(verdicts)
    for index, p, q in zip(members, claimed, opposite, strict=True):
        verdict = verdicts[index]
        p = math.nan if math.isnan(verdict.p_value) else float(p)
        outcome = verdict.verdict
        if outcome != NOT_CONVERGED:
            outcome = (SUPPORTED if p < verdict.alpha else
                       NOT_SUPPORTED if q < verdict.alpha else INCONCLUSIVE)
        detail = verdict.detail
        if len(members) > 1 and not math.isnan(p):
            detail += (f"; Holm-adjusted across the report's {len(members)} t-test claims: p "
                       f"{p:.3g}, opposite p {q:.3g}")
        mde = verdict.mde if outcome == INCONCLUSIVE else math.nan
        if outcome == INCONCLUSIVE and verdict.mde_note:
            detail += verdict.mde_note
        judged[index] = dataclasses.replace(verdict, verdict=outcome, p_adjusted=p,
                                            detail=detail, mde=mde, family=len(members))
    return judged


def p_or_one(p_value: float) -> float:
    """A test without a p-value (fewer than 2 seeds) counts as p = 1: never rejected."""
    return 1.0 if math.isnan(p_value) else p_value
