"""What a well-formed report.md is, for the tests of the report and of the shipped recipes."""

from __future__ import annotations

import re


def _tables(text):
    """Each markdown table of ``text`` as a list of its lines' cell counts."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(len(re.findall(r"(?<!\\)\|", line)) - 1)
        elif current:
            tables.append(current)
            current = []
    return tables


def check_well_formed(path):
    """Check that report.md has one title, then ## / ### headings, tables whose rows have equal
    cell counts, and every linked figure; return its text and the links."""
    text = path.read_text()
    assert text.startswith("# ")
    headings = re.findall(r"^(#+) ", text, flags=re.MULTILINE)
    assert headings.count("#") == 1 and all(len(h) in (2, 3) for h in headings[1:])
    for counts in _tables(text):
        assert len(counts) >= 2 and len(set(counts)) == 1, counts
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    for link in links:
        assert (path.parent / link).is_file(), link
    return text, links
