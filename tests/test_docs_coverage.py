"""Every paper's page declares, item by item, what covers each of its numbered tables, figures,
theorems, propositions, lemmas and corollaries: a shipped recipe, or the reason none does.

The papers themselves do not ship with the repository, so their numbered items are listed here
(read off each paper's text, appendices included; items a paper only cites from other work,
such as "Theorem 4 in [10]", are not its own). Each page has a section "Coverage" whose table
has one row per item, in any order: ``| item | recipe | why, or what it covers |``, the recipe
column naming shipped recipes in backticks or ``none``, and a row without a recipe giving its
reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contrastkit.experiments import recipe_names

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _numbered(kind: str, numbers) -> list[str]:
    return [f"{kind} {number}" for number in numbers]


#: page -> the numbered items of its paper.
ITEMS = {
    # the central paper: Lee, Lim, Lee, Sohn, ICML 2025, arXiv:2506.09781
    "reproduction.md": [
        *_numbered("Fig.", range(1, 7)), *_numbered("Table", range(1, 6)),
        *_numbered("Theorem", ("5.1", "5.2", "5.3", "5.5", "5.6")),
        *_numbered("Proposition", ("C.1", "C.2")),
        *_numbered("Lemma", ("C.3", "C.4", "C.6", "C.7", "C.8", "C.13", "C.14", "C.15",
                             "C.17")),
        *_numbered("Theorem", ("C.5", "C.9", "C.10", "C.16", "C.18")),
    ],
    # LMCL: Chen, Niu, Gong, Li, Yang, Sugiyama, ICML 2021
    "reproduction/lmcl.md": [
        *_numbered("Fig.", range(1, 6)), *_numbered("Table", range(1, 6)),
        *_numbered("Theorem", range(1, 5)), *_numbered("Lemma", range(1, 4)),
    ],
    # the sigmoid loss: Lee, Chang, Sohn, AISTATS 2024, arXiv:2402.12613
    "reproduction/sigmoid.md": [
        *_numbered("Fig.", range(1, 4)), *_numbered("Theorem", range(1, 3)),
        *_numbered("Corollary", range(1, 5)), "Lemma 1", "Proposition 1",
    ],
    # hard negatives: Jiang, Nguyen, Aeron, Ishwar, arXiv:2311.05139
    "reproduction/hardneg.md": [
        *_numbered("Fig.", range(1, 16)), *_numbered("Table", range(1, 3)),
        *_numbered("Theorem", range(1, 4)), *_numbered("Corollary", range(1, 3)), "Lemma 1",
    ],
}
HEADING = re.compile(r"^#+ Coverage\b.*$", re.MULTILINE)
RECIPE = re.compile(r"`([a-z0-9-]+/[a-z0-9-]+)`")


def coverage_rows(text: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table after the page's "Coverage" heading, the
    header and its rule left out; a page without the heading or the table has none."""
    heading = HEADING.search(text)
    if heading is None:
        return []
    lines = text[heading.end():].lstrip("\n").splitlines()
    rows = []
    for line in lines:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[2:]


def coverage_problems(rows: list[list[str]], items: list[str], recipes: set[str]) -> list[str]:
    """What is wrong with a coverage table: an item missing, repeated or not the paper's, a
    recipe that does not exist, a row with neither a recipe nor a reason."""
    problems = []
    listed = [row[0] for row in rows]
    problems += [f"missing: {item}" for item in items if item not in listed]
    problems += [f"not an item of the paper: {item}" for item in listed if item not in items]
    problems += [f"listed twice: {item}" for item in set(listed) if listed.count(item) > 1]
    for row in rows:
        if len(row) != 3:
            problems.append(f"{row[0]}: expected 3 cells, got {len(row)}")
            continue
        item, covered, reason = row
        named = RECIPE.findall(covered)
        problems += [f"{item}: no recipe {name}" for name in named if name not in recipes]
        if not named and (covered != "none" or not reason):
            problems.append(f"{item}: neither a recipe nor `none` with a reason")
    return problems


@pytest.mark.parametrize("page", ITEMS)
def test_every_numbered_item_of_the_paper_has_a_row(page):
    rows = coverage_rows((DOCS / page).read_text())
    assert rows, f"docs/{page} has no Coverage table"
    assert coverage_problems(rows, ITEMS[page], set(recipe_names())) == []


def test_a_table_that_misses_an_item_or_names_no_recipe_is_caught():
    text = ("## Coverage\n\n| item | recipe | why |\n|---|---|---|\n"
            "| Fig. 1 | `lmcl/fig3` | the scatter |\n| Fig. 2 | `lmcl/nothing` | |\n"
            "| Fig. 2 | none | |\n| Table 9 | none | an illustration |\n\nAfter.\n")
    problems = coverage_problems(coverage_rows(text), ["Fig. 1", "Fig. 2", "Fig. 3"],
                                 {"lmcl/fig3"})
    assert problems == ["missing: Fig. 3", "not an item of the paper: Table 9",
                        "listed twice: Fig. 2", "Fig. 2: no recipe lmcl/nothing",
                        "Fig. 2: neither a recipe nor `none` with a reason"]
