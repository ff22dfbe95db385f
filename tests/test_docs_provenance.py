"""Every number of the reproduction pages comes from the committed evidence, the paper, or the
structure of the text.

A number in docs/reproduction.md, a paper's page (docs/reproduction/<paper>.md) or
docs/image-text.md passes if it is

- produced by the committed evidence of a recipe its block or section names (in a code span or
  by its evidence folder's link): a per-seed value, a cell's mean or interval, a difference or
  ratio of two cells' means, a run's convergence quantities, a count of cells, seeds, runs,
  unconverged runs or verdicts, the record's schedule and minutes, or a number of the generated
  report (tests/evidence_numbers.py), rounded as the page writes it (``0.0196`` is 0.0196 to
  four decimals; a sign, when written, must agree);
- a paper value that recipe quotes (its ``paper:`` values), where the block names the paper or a
  table or figure;
- a number the recipe states (grid levels, tier settings, tolerances, measured minutes);
- a reference (Table 2, Figs. 5 and 6, Theorem 5.5, Eq. 30, Sec. 5.4, App. C.2, arXiv:..., a
  year after a venue), or one of the few structural numbers of ``STRUCTURAL`` (each with its
  reason).

A number edited in a page, or evidence that changes, fails here until the two agree again. The
sentences that state a count or an ordering the audit of issue 36 found wrong are also rebuilt
from the data (tests/test_docs_statements.py).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from contrastkit.experiments import recipe_names
from tests.doc_numbers import Number, numbers
from tests.evidence_numbers import evidence, paper, settings
from tests.test_docs_statements import without_sentences

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["reproduction.md", "reproduction/lmcl.md", "reproduction/sigmoid.md",
         "reproduction/hardneg.md", "image-text.md"]
_KEYWORDS = (r"Tables?|Figs?\.|Figures?|Theorems?|Lemmas?|Corollar(?:y|ies)|Propositions?|"
             r"Examples?|Defs?\.|Definitions?|Eqs?\.|eq\.|Secs?\.|Sections?|App\.|Appendix|"
             r"Algorithm|Remarks?|rows?|lines?|condition|Assumptions?|Step|PMLR")
_ITEM = r"\(?[A-E]?\d+(?:\.\d+)?[a-z]?\)?"
#: A reference: the keyword, then any earlier items of its list (Figs. 3, 4, 7-9).
REFERENCE = re.compile(rf"(?:{_KEYWORDS})\s+(?:{_ITEM}(?:,\s*|\s+and\s+|\s+or\s+|\s*[-–]\s*|"
                       rf"\s+to\s+|\s*:\s*))*\(?[A-E]?\.?$")
CITATION = re.compile(r"(?:arXiv:|ICML|AISTATS|ICCV|ECCV|NeurIPS|ICLR|RepL4NLP|version of \w+)\s*$")
PAPER_CONTEXT = re.compile(r"\bpaper|\bTable \d|\bFigs?\. \d|\bTheory\b")
#: A percentage, or the first end of a range of percentages (99.4-99.7 %).
PERCENT = re.compile(r"\s*(?:(?:[-–]|to)\s*[\d.]+\s*)?%")
#: The structural numbers no evidence or recipe states: (the number, a pattern of the text
#: around it, written ``before<number>after``) -> why it is not a result.
STRUCTURAL: dict[tuple[str, str], str] = {
    ("130", r"exit status 130"): "the exit status of a process stopped by SIGINT (128 + 2)",
    ("143", r"or 143"): "the exit status of a process stopped by SIGTERM (128 + 15)",
    ("2", r"exit code 2"): "the CLI's exit status for bad input",
    ("3", r"fewer than 3 seeds"): "the smallest number of seeds a report counts as evidence",
    ("45", r"45-minute budget|45 minutes per recipe|within 45 minutes"):
        "the time a cpu tier is meant to fit in (tests/test_docs_measured.py)",
    ("1 437", r""): "the bundled digits' training images (contrastkit.data)",
    ("4 000", r"4 000 training"): "the captioned shapes' training split (contrastkit.data)",
    ("1 000", r"and 1 000\s"): "the captioned shapes' test split (contrastkit.data)",
    ("96", r"cropped to 96|96 × 96"): "the caption files' default image_size (contrastkit.data)",
    ("256", r"B / 256|batch / 256"): "the paper's learning-rate scaling, lr x batch / 256",
    ("150", r"120 \(not 150\)"): "lmcl/table1's 120 runs plus lmcl/fig3's 30, named in the table",
    ("21", r"21 \(not 36\)"): "the distinct runs of the table's second row, counted there",
    ("36", r"21 \(not 36\)"): "the runs of lmcl/fig2, lmcl/table2 and lmcl/reduction, summed",
    ("66", r"48 \(not 66\)"): "the runs of hardneg/fig2 and hardneg/bounds, summed",
    ("150", r"noise 0.1, 150 points"): "the toy data set's size, as the paper states it",
    ("2 016", r"2 x 2 016"): "64 x 63 / 2, the within-view pairs of a batch of 64",
    ("33 000", r"about 33 000"): "256 x 255 / 2 pairs, against the one of a mean",
    ("73.58", r"CMC from 73.58"): "the paper's text (Sec. 5), quoted against its own Table 2",
    ("75.88", r"to 75.88"): "the paper's text (Sec. 5), quoted against its own Table 2",
    ("-10", r"bias -10"): "SigLIP's initial bias (Zhai et al.)",
    ("200", r"after 200"): "the paper's words on its synthetic runs (Sec. 5.1)",
    ("300", r"the 300 points|exceeds the 300"): "3 classes x 100 points, stated beside it",
    ("0.393451", r"= 0.393451"): "the closed form computed in the same sentence",
    ("0.310555", r"= 0.310555"): "the closed form computed in the same sentence",
    ("1024", r"\(1024 by default\)|never .*; 1024 queries"):
        "retrieval_metrics' default chunk of queries, and its memory at that chunk",
}


class Values:
    """Numbers, looked up as a page writes them: rounded to its decimals, or to its mantissa's
    for a number with an exponent; a share also as a percentage where the page writes one."""

    def __init__(self, values, shares: bool = True):
        self.values = [v for v in values if v == v and abs(v) != float("inf")]
        self.percent = Values([100 * v for v in self.values if abs(v) <= 1], False) \
            if shares else None
        self._rounded: dict[tuple[str, int], set] = {}

    def _keys(self, kind: str, decimals: int) -> set:
        if (kind, decimals) not in self._rounded:
            if kind == "e":
                keys = {f"{v:.{decimals}e}" for v in self.values}
            else:
                keys = {round(v, decimals) for v in self.values}
            keys |= {abs(key) if kind != "e" else key.lstrip("-") for key in keys}
            self._rounded[kind, decimals] = keys
        return self._rounded[kind, decimals]

    def has(self, number: Number) -> bool:
        """Whether a value is the number as written (a sign, when written, must agree)."""
        if PERCENT.match(number.after) and self.percent and self.percent.has(number):
            return True
        before = number.before.rstrip()
        if before.endswith(("<", ">", "≤", "≥")):  # a bound: p < 1e-4
            below = before.endswith(("<", "≤"))
            return any(abs(v) <= number.value if below else abs(v) >= number.value
                       for v in self.values)
        signed = -number.value if number.sign == "-" else number.value
        if "e" in number.text:
            key = f"{signed:.{number.decimals}e}"
            return (key if number.sign else key.lstrip("-")) in self._keys("e", number.decimals)
        keys = self._keys("f", number.decimals)
        if number.sign:
            return round(signed, number.decimals) in {round(v, number.decimals)
                                                      for v in self.values}
        if number.value in keys:
            return True
        zeros = len(number.text) - len(number.text.rstrip("0"))
        about = before.endswith(("about", "~")) and number.decimals == 0 and zeros > 0
        return about and any(round(abs(v), -zeros) == number.value for v in self.values)


@cache
def vocabulary(recipe: str, with_paper: bool) -> Values:
    """What a page may quote about ``recipe``: its evidence and settings, and its paper values
    where the text names the paper."""
    return Values(evidence(recipe) | settings(recipe) | (paper(recipe) if with_paper else set()))


def reference(number: Number) -> bool:
    """Whether the number is part of a reference or a citation."""
    return bool(REFERENCE.search(number.before) or CITATION.search(number.before))


def unexplained(page: str, text: str | None = None) -> list[str]:
    """Each number of ``page`` (or of ``text`` read as that page) that nothing produces, with
    the text before it."""
    known = set(recipe_names())
    problems = []
    text = without_sentences(page, (DOCS / page).read_text() if text is None else text)
    for number in numbers(text, known):
        if reference(number):
            continue
        around = number.before + number.text + number.after
        if any(text == number.text and re.search(pattern, around)
               for text, pattern in STRUCTURAL):
            continue
        quoted = PAPER_CONTEXT.search(number.block)
        if not any(vocabulary(recipe, bool(quoted)).has(number) for recipe in number.recipes):
            problems.append(f"{number.text!r} after {number.before[-40:]!r} "
                            f"(recipes: {', '.join(sorted(number.recipes)) or 'none'})")
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_number_of_the_page_comes_from_the_evidence(page):
    problems = unexplained(page)
    assert not problems, f"docs/{page}: numbers no evidence produces:\n" + "\n".join(problems)


@pytest.mark.parametrize("old, new, flagged", [
    ("0.0123 at batch 64", "0.0124 at batch 64", "'0.0124'"),  # a mean misrounded
    ("0.0245 → 0.0102", "0.0245 → 0.0112", "'0.0112'"),  # a mean miscopied
    ("single runs: -0.64", "single runs: -0.74", "'-0.74'"),  # a paper value miscopied
])
def test_a_number_edited_in_the_page_fails(old, new, flagged):
    text = (DOCS / "reproduction.md").read_text()
    assert old in text
    problems = unexplained("reproduction.md", text.replace(old, new))
    assert any(problem.startswith(flagged) for problem in problems), problems
