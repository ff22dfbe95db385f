"""The sentences of the reproduction pages that state a count, a range or an ordering the audit
of issue 36 found wrong, rebuilt from the committed evidence: each must appear in its page
(whitespace aside), so a page edited or data that change fail here until the two agree. Their
numbers count as produced by the data in tests/test_docs_provenance.py.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
EVIDENCE = DOCS / "reproduction"
WORDS = ["No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten"]


def _runs(recipe: str) -> dict[tuple[str, str], dict]:
    """(cell, seed) -> the run's row fields and its metrics."""
    runs: dict[tuple[str, str], dict] = defaultdict(dict)
    with open(EVIDENCE / f"{recipe.replace('/', '-')}-cpu" / "results.csv", newline="") as f:
        for row in csv.DictReader(f):
            run = runs[row["cell"], row["seed"]]
            run.update({k: v for k, v in row.items() if k not in ("metric", "value")})
            run[row["metric"]] = float(row["value"])
    return runs


def _means(recipe: str, metric: str) -> dict[str, float]:
    with open(EVIDENCE / f"{recipe.replace('/', '-')}-cpu" / "summary.csv", newline="") as f:
        return {row["cell"]: float(row["mean"]) for row in csv.DictReader(f)
                if row["metric"] == metric}


def rule_1_share(run: dict) -> float:
    """The share of its fall a run's loss made in the second half, as convergence rule 1
    computed it from the three losses its rows keep (first, half-way and last epoch's mean;
    0 for a loss that did not fall): rule 1 called a run converged at a share of at most 0.1."""
    first, half, final = run["first_train_loss"], run["half_train_loss"], run["train_loss"]
    return (half - final) / (max(first, half) - final) if half > final else 0.0


def hardneg_fig4_unconverged() -> str:
    """hardneg.md: how many fig4 runs rule 1 judged not converged, all HSCL at beta 10 (today's
    rule judges none of them: the rows lack its curves)."""
    failed = [run for run in _runs("hardneg/fig4").values() if rule_1_share(run) > 0.1]
    assert {(run["loss"], float(run["beta"])) for run in failed} == {("scl", 10.0)}
    verb = "run did" if len(failed) == 1 else "runs did"
    return (f"**{WORDS[len(failed)]} {verb} not converge by rule 1** (the loss rule), all HSCL "
            f"at beta = 10")


def hardneg_beta_gaps() -> str:
    """hardneg.md: the NC gaps of hardneg/beta's runs at beta 0 and 5, none below the
    threshold that "reaches NC" means in every hardneg recipe."""
    gaps = [run["nc_gap"] for run in _runs("hardneg/beta").values()
            if float(run["beta"]) in (0.0, 5.0)]
    assert min(gaps) > 0.05
    return (f"no run at beta 0 and 5 reaches neural collapse by the recipes' threshold (`nc_gap` "
            f"{min(gaps):.3f} to {max(gaps):.3f} against 0.05)")


def sigmoid_fig2_extremes() -> str:
    """sigmoid.md: the point-seeds above the blue curve at N = 4, 5 (d = ceil(N/2)) that miss
    s = 1, and the point where more than one seed misses."""
    points = defaultdict(list)
    for run in _runs("sigmoid/fig2").values():
        if run["dim"] == "half" and run["regime"] == "etf" and run["N"] in ("4", "5"):
            points[run["N"], run["t"]].append(run["s_measured"])
    misses = {key: [s for s in values if abs(s - 1) > 1e-3] for key, values in points.items()}
    missed = [s for values in misses.values() for s in values]
    (n, t), = [key for key, values in misses.items() if len(values) > 1]
    twice = misses[n, t]
    return (f"above the blue curve {len(missed)} of the "
            f"{sum(len(values) for values in points.values())} point-seeds there end with s "
            f"between {min(missed):.2f} and {max(missed):.2f}, and below the red curve one seed at "
            f"N = 5, t = 0.2 ends at s = 1. At N = {n}, t = {t} {WORDS[len(twice)].lower()} "
            f"seeds of {WORDS[len(points[n, t])].lower()} fail (both at s = {max(twice):.2f})")


def beyond_knn_order() -> str:
    """reproduction.md: the kNN accuracy of the beyond recipe's four arms, which orders them
    otherwise than the linear probe (VRNS above batch 64 where the probe is below)."""
    knn = _means("beyond/vrns-vs-large-batch", "knn_top1")
    probe = _means("beyond/vrns-vs-large-batch", "linear_top1")
    base, vrns = "batch_size=64,vrns=0.0", "batch_size=64,vrns=30.0"
    large, both = "batch_size=512,vrns=0.0", "batch_size=512,vrns=30.0"
    assert knn[vrns] > knn[base] and probe[vrns] < probe[base]
    return (f"The kNN accuracy orders the arms differently: {knn[base]:.1f} % at batch 64, "
            f"{knn[vrns]:.1f} % with VRNS (above it, where the probe is below), "
            f"{knn[large]:.1f} % at batch 512 and {knn[both]:.1f} % with both")


def convergence_bounds() -> str:
    """reproduction.md: the noise bounds of the convergence rule (Bonferroni over a run's
    curves, Student's t), as the rule computes them."""
    from contrastkit.experiments.convergence import noise_bound

    many = 10**7
    return (f"The bounds, in standard errors: for one curve {noise_bound(1, many):.2f} with many "
            f"points (the normal quantile); for nine curves {noise_bound(9, many):.2f} with many "
            f"points, {noise_bound(9, 51):.2f} with 51 and {noise_bound(9, 6):.2f} with 6.")


#: page -> the functions that build its sentences.
SENTENCES = {
    "reproduction.md": [beyond_knn_order, convergence_bounds],
    "reproduction/hardneg.md": [hardneg_fig4_unconverged, hardneg_beta_gaps],
    "reproduction/sigmoid.md": [sigmoid_fig2_extremes],
}


def prose(text: str) -> str:
    """The text with every run of whitespace made one space."""
    return " ".join(text.split())


def without_sentences(page: str, text: str) -> str:
    """``text`` with the sentences this module checks blanked out, wherever their lines break."""
    for build in SENTENCES.get(page, []):
        pattern = r"\s+".join(re.escape(word) for word in build().split())
        text = re.sub(pattern, " ", text)
    return text


@pytest.mark.parametrize("page", sorted(SENTENCES))
def test_the_page_states_what_the_evidence_says(page):
    text = prose((DOCS / page).read_text())
    missing = [build() for build in SENTENCES[page] if build() not in text]
    assert not missing, f"docs/{page} should say:\n" + "\n".join(missing)


#: "<cells> cells x <seeds> seeds" in a report's notes.
CELLS_SEEDS = re.compile(r"\b(\d+) cells x (\d+) seeds")


@pytest.mark.parametrize("report", sorted(EVIDENCE.glob("*-cpu/report.md")),
                         ids=lambda path: path.parent.name)
def test_a_reports_notes_count_the_cells_and_seeds_of_its_run(report):
    """The hand-written notes of a report (its recipe's) that count the tier's cells and seeds
    count those of the run record."""
    record = json.loads((report.parent / "run.json").read_text())
    notes = prose(report.read_text().split("\n## Notes\n", 1)[-1])
    for cells, seeds in CELLS_SEEDS.findall(notes):
        assert (int(cells), int(seeds)) == (record["cells"], len(record["seeds"])), \
            f"{report.parent.name}'s notes say {cells} cells x {seeds} seeds; the record: " \
            f"{record['cells']} x {len(record['seeds'])}"
