"""The numbers a Markdown page states, each with the text around it and the recipes it is about.

A page is read as blocks (a paragraph, a bullet, a table row) under their headings. Code (fenced
blocks and inline spans) and link targets are not prose and are left out, but a recipe named in
an inline span (`` `lmcl/fig2` ``) or linked (``lmcl-fig2-cpu/report.md``) makes the block and
its section about that recipe. Numbers that belong to a name (ResNet-50, top-1, R@1, log10,
``sigma_9``, 8x8, MNIST-5k) are not numbers; ``1 437`` is one; ``0.37-0.97`` is a range of two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A recipe named in a code span, or linked by its evidence folder.
_RECIPE_SPAN = re.compile(r"`([a-z0-9]+/[a-z0-9-]+)`")
_RECIPE_LINK = re.compile(r"(?:^|/|\()([a-z0-9]+)-([a-z0-9-]+?)-(?:cpu|quick|paper)/")
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
#: A number: digits with optional groups of three after a space (1 437), decimals, an exponent.
_NUMBER = re.compile(r"(?<![\w.@^/])([-+−]?)"
                     r"(\d{1,3}(?: \d{3})+(?![\d.])|\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
                     r"(?![\w@^/]|\.\d)")
_ITEM_START = ("- ", "* ", "|")


@dataclass
class Number:
    """A number as a page writes it, with its block and the recipes that block is about."""

    text: str
    value: float
    decimals: int
    sign: str
    before: str
    after: str
    block: str
    recipes: set[str] = field(default_factory=set)


def _recipes(text: str, known: set[str]) -> set[str]:
    found = set(_RECIPE_SPAN.findall(text))
    for family, name in _RECIPE_LINK.findall(text):
        found.add(f"{family}/{name}")
    return found & known


def blocks(text: str) -> list[tuple[str, str]]:
    """(heading, block) for each paragraph, bullet or table row outside fenced code."""
    out, heading, current, fenced = [], "", [], False

    def flush():
        if current:
            out.append((heading, " ".join(current)))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        if stripped.startswith("#"):
            flush()
            heading = stripped
            out.append((heading, stripped))
        elif not stripped or stripped.startswith(_ITEM_START) or re.match(r"\d+\. ", stripped):
            flush()
            if stripped:
                current.append(stripped)
            if stripped.startswith("|"):
                flush()
        else:
            current.append(stripped)
    flush()
    return out


def _decimals(token: str) -> int:
    mantissa = token.split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def numbers(text: str, known_recipes: set[str]) -> list[Number]:
    """Every number of the page's prose, each with the recipes of its block and section (or of
    the page, for a section that names none)."""
    found, pieces = [], blocks(text)
    sections: dict[str, list[str]] = {}
    for heading, block in pieces:
        sections.setdefault(heading, []).append(block)
    everywhere = _recipes(text, known_recipes)
    for heading, block in pieces:
        recipes = _recipes(block, known_recipes) | _recipes("\n".join(sections[heading]),
                                                             known_recipes)
        recipes = recipes or everywhere
        prose = _LINK_TARGET.sub("]", _CODE_SPAN.sub(" ", block))
        for match in _NUMBER.finditer(prose):
            sign, token = match.group(1), match.group(2)
            start = match.start()
            if sign and start > 0 and (prose[start - 1].isdigit() or prose[start - 1] == "."):
                sign = ""  # a range, 0.37-0.97
            hyphen = start - (0 if sign else 1)
            if hyphen > 0 and prose[hyphen] == "-" and prose[hyphen - 1].isalpha():
                continue  # a name, ResNet-50
            found.append(Number(text=sign + token, value=float(token.replace(" ", "")),
                                decimals=_decimals(token), sign=sign.replace("−", "-"),
                                before=prose[max(0, start - 40):start],
                                after=prose[match.end():match.end() + 20], block=prose,
                                recipes=recipes))
    return found

