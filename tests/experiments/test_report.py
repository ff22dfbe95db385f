"""report.md is well formed and says what it must: the paper's values beside ours, a verdict
for every claim, the run's facts; the figures it links exist."""

from __future__ import annotations

import math
import re
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from contrastkit.experiments.claims import Verdict, evaluate_claims
from contrastkit.experiments.figures import figure_kinds
from contrastkit.experiments.report import write_report
from contrastkit.experiments.results import summarize
from tests.experiments.report_checks import check_well_formed as _check_well_formed
from tests.experiments.synthetic_rows import make_rows

RUN_INFO = {"command": "contrastkit reproduce similarities/table1 --tier quick",
            "machine": "2 CPU cores, no GPU", "seconds": 75.25, "cell_seconds": 140.0,
            "started": "2025-06-01 10:00"}


def _noise(axes, seed):
    key = zlib.crc32(repr(sorted(axes.items())).encode())
    return float(np.random.default_rng([key, seed]).normal())


def _variance(axes, seed):
    return 0.2 - 0.01 * math.log2(axes["batch_size"]) - 0.001 * axes.get("vrns", 0) + 0.003 * (
        _noise(axes, seed))


def _accuracy(axes, seed):
    return 0.8 + 0.001 * axes.get("vrns", 0) - 0.02 * abs(math.log(axes.get("temperature", 0.5))
                                                           ) + 0.005 * _noise(axes, seed)


def _recipe(**attributes):
    defaults = {"name": "similarities/table1", "title": "Table 1: variance | batch size",
                "reproduces": "Table 1 of Lee, Lim, Lee, Sohn, ICML 2025",
                "notes": "Digits instead of CIFAR-10:\nfar easier.", "paper": [], "claims": []}
    return SimpleNamespace(**{**defaults, **attributes})


VRNS_LOWERS = {"id": "vrns_lowers", "text": "VRNS lowers the variance | at every batch",
               "metric": "neg_sim_var", "test": "lower", "treatment": {"vrns": 30.0},
               "control": {"vrns": 0.0}, "for_each": "batch_size"}
PAPER = [{"batch_size": 16, "vrns": 0.0, "metric": "neg_sim_var", "value": 0.1649},
         {"batch_size": 512, "vrns": 0.0, "metric": "neg_sim_var", "value": 0.1396}]


def _write(tmp_path, recipe, rows, run_info=RUN_INFO):
    summary = summarize(rows)
    verdicts = evaluate_claims(recipe, rows)
    return write_report(recipe, "quick", rows, summary, verdicts, tmp_path, run_info)


def test_a_table1_report_puts_the_paper_beside_ours_and_tests_the_claim(tmp_path):
    rows = make_rows({"batch_size": [16, 64, 256], "vrns": [0.0, 30.0]}, 3,
                     {"neg_sim_var": _variance}, fixed={"loss": "simclr"})
    recipe = _recipe(paper=PAPER, claims=[VRNS_LOWERS])
    text, links = _check_well_formed(_write(tmp_path, recipe, rows))
    assert links == ["variance_vs_batch.png"]
    for heading in ("## Setup", "## Results", "### neg_sim_var", "## Claims", "## Notes",
                    "## Figures"):
        assert heading in text
    assert text.startswith("# Table 1: variance | batch size\n")
    cell = next(e for e in summarize(rows) if e["cell"] == "batch_size=16,vrns=0.0")
    half = (cell["ci_high"] - cell["ci_low"]) / 2
    line = next(line for line in text.splitlines() if line.startswith("| 16 | 0.0 |"))
    paper, ours = (part.strip() for part in line.split("|")[3:5])
    assert paper == "0.1649"
    mean, rest = ours.split(" ± ")
    assert float(mean) == pytest.approx(cell["mean"], abs=half / 10)
    assert float(rest.split()[0]) == pytest.approx(half, rel=0.1) and rest.endswith("(n=3)")
    assert next(line for line in text.splitlines() if line.startswith("| 16 | 30.0 |")
                ).split("|")[3].strip() == "—"
    assert "batch_size=512, vrns=0.0: 0.1396" in text  # a paper cell this tier did not run
    verdict = evaluate_claims(recipe, rows)[0]
    assert (f"| `vrns_lowers` | VRNS lowers the variance \\| at every batch | "
            f"**{verdict.verdict}** |") in text
    assert "| wall time | 1 min 15 s (this invocation" in text
    assert "| cell time | 2 min 20 s (every cell" in text
    assert RUN_INFO["machine"] in text and RUN_INFO["command"] in text
    assert "Digits instead of CIFAR-10:" in text


def test_what_the_run_info_lacks_reads_not_recorded_and_a_schedule_is_a_table(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 2, {"neg_sim_var": _variance},
                     fixed={"vrns": 0.0})
    schedule = {"batch_size=16": {"steps": 40, "epochs": 1},
                "batch_size=128": {"steps": 40, "epochs": 3}}
    info = {"command": "x", "seconds": 3.5, "fixed": "steps", "schedule": schedule,
            "data": "digits (8x8), not CIFAR-10"}
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows, info))
    assert "| machine | not recorded |" in text
    assert "| batch_size=128 | 40 | 3 |" in text
    assert "the number of optimizer steps" in text and "digits (8x8), not CIFAR-10" in text
    assert "3.5 s" in text


def test_the_tier_that_ran_adds_its_notes_and_an_unrecorded_schedule_is_left_out(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 2, {"neg_sim_var": _variance})
    tiers = {"quick": SimpleNamespace(notes="Sized from a measured step."),
             "paper": SimpleNamespace(notes="ResNet-50 for 400 epochs.")}
    info = {**RUN_INFO, "schedule": {"batch_size=16": {"steps": None, "epochs": None}}}
    text, _ = _check_well_formed(_write(tmp_path, _recipe(tiers=tiers), rows, info))
    notes = text.split("## Notes")[1]
    assert notes.index("Digits instead of CIFAR-10:") < notes.index(
        "The quick tier: Sized from a measured step.")
    assert "ResNet-50" not in text  # another tier's notes
    assert "## Steps and epochs per cell" not in text


def test_one_seed_shows_the_mean_alone_and_the_claim_inconclusive(tmp_path):
    rows = make_rows({"batch_size": [16, 128], "vrns": [0.0, 30.0]}, 1,
                     {"neg_sim_var": _variance})
    text, links = _check_well_formed(_write(tmp_path, _recipe(claims=[VRNS_LOWERS]), rows))
    table = [line for line in text.split("## Claims")[0].splitlines() if line.startswith("| 1")]
    assert len(table) == 4 and all(line.endswith("(n=1) |") and "±" not in line
                                   for line in table)
    assert "**inconclusive**" in text and "needs >= 2 seeds" in text
    assert links == ["variance_vs_batch.png"]


def test_a_temperature_sweep_draws_accuracy_against_temperature(tmp_path):
    rows = make_rows({"temperature": [0.1, 0.5, 2.0], "vrns": [0.0, 30.0]}, 2,
                     {"linear_top1": _accuracy, "knn_top1": _accuracy})
    _, links = _check_well_formed(_write(tmp_path, _recipe(), rows))
    assert links == ["accuracy_vs_temperature.png"]


def test_losses_by_batch_sizes_draw_gain_bars(tmp_path):
    rows = make_rows({"loss": ["simclr", "dcl", "dhel"], "batch_size": [32, 256],
                      "vrns": [0.0, 30.0]}, 2, {"linear_top1": _accuracy})
    _, links = _check_well_formed(_write(tmp_path, _recipe(), rows))
    assert links == ["gain_bars.png"]


def test_gain_bars_split_by_the_axis_that_varies_not_by_a_single_level_one(tmp_path):
    from contrastkit.experiments.figures import FIGURES, FigureData

    rows = make_rows({"dataset": ["mnist5k"], "loss": ["simclr", "dcl"], "batch_size": [32, 128],
                      "vrns": [0.0, 30.0]}, 2, {"linear_top1": _accuracy})
    axes = ["dataset", "loss", "batch_size", "vrns"]
    figure = FIGURES.get("gain_bars").draw(FigureData(summarize(rows), axes, [], rows, tmp_path))
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert labels == ["without VRNS", "VRNS λ=30"]


def test_a_simulation_has_no_figure_and_exact_verdicts(tmp_path):
    rows = make_rows({"m": [2, 4]}, 2, {"full_neg_mean": lambda axes, seed: -1 / 7,
                                        "theory_full_neg_mean": lambda axes, seed: -1 / 7})
    claim = {"id": "optimum", "metric": "full_neg_mean", "test": "close",
             "target": "theory_full_neg_mean", "tolerance": 1e-6}
    text, links = _check_well_formed(_write(tmp_path, _recipe(claims=[claim]), rows))
    assert links == [] and "## Figures" not in text
    assert "| `optimum` | — | **supported** | 0 | — | — | — | 4 |" in text
    assert "Verdicts: 1 supported." in text


def test_the_report_folder_is_made_when_missing(tmp_path):
    rows = make_rows({"m": [2, 4]}, 2, {"mini_neg_var": lambda axes, seed: 0.1})
    path = _write(tmp_path / "new" / "quick", _recipe(), rows)
    assert path == tmp_path / "new" / "quick" / "report.md" and path.is_file()


def test_the_recipe_may_name_its_figure_or_none(tmp_path):
    rows = make_rows({"batch_size": [16, 128], "vrns": [0.0, 30.0]}, 2,
                     {"neg_sim_var": _variance})
    _, links = _check_well_formed(_write(tmp_path, _recipe(figure="none"), rows))
    assert links == []
    assert not (tmp_path / "variance_vs_batch.png").exists()


def test_the_figure_is_chosen_by_the_axes_and_metrics():
    assert figure_kinds(None, ["batch_size", "vrns"], ["neg_sim_var"]) == ["variance_vs_batch"]
    assert figure_kinds(None, ["loss", "batch_size", "vrns"], ["linear_top1", "neg_sim_var"]
                        ) == ["gain_bars", "variance_vs_batch"]
    assert figure_kinds(None, ["m"], ["mini_neg_var"]) == []
    assert figure_kinds("gain_bars", ["batch_size"], []) == ["gain_bars"]
    with pytest.raises(ValueError, match="figure must be one of"):
        figure_kinds("histogram", [], [])


def test_a_named_figure_without_its_data_is_left_out(tmp_path):
    rows = make_rows({"m": [2, 4]}, 2, {"mini_neg_var": lambda axes, seed: 0.1})
    _, links = _check_well_formed(_write(tmp_path, _recipe(figure="gain_bars"), rows))
    assert links == []


def test_a_metric_of_many_cells_is_a_sentence_not_a_table(tmp_path):
    rows = make_rows({"t": [round(0.1 * k, 1) for k in range(1, 62)]}, 2,
                     {"s": lambda axes, seed: axes["t"] / 10})
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows))
    results = text.split("## Results")[1].split("## Claims")[0]
    assert "| 0.1 |" not in results
    assert "61 cells, means from 0.01 to 0.61" in results and "summary.csv" in results


def test_the_claims_table_gives_the_mde_of_an_inconclusive_test_and_counts_the_verdicts(
        tmp_path):
    def value(axes, seed):
        """VRNS and the batch move the value up at one seed and down at the next."""
        sign = 1 if seed % 2 else -1
        rank = [16, 64, 256].index(axes["batch_size"])
        return 0.2 + sign * (0.01 * bool(axes["vrns"]) + 0.01 * rank) + 0.001 * seed

    rows = make_rows({"batch_size": [16, 64, 256], "vrns": [0.0, 30.0]}, 3,
                     {"neg_sim_var": value})
    claim = {**VRNS_LOWERS, "for_each": None}
    falls = {"id": "falls", "text": "falls", "metric": "neg_sim_var", "test": "decreasing",
             "along": "batch_size"}
    text, _ = _check_well_formed(_write(tmp_path, _recipe(claims=[claim, falls]), rows))
    verdicts = evaluate_claims(_recipe(claims=[claim, falls]), rows)
    assert [v.verdict for v in verdicts] == ["inconclusive", "inconclusive"]
    assert "| claim | statement | verdict | effect | d_z | one-sided p | MDE | n |" in text
    for v in verdicts:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{v.claim_id}`"))
        cells = re.split(r"(?<!\\)\|", row)  # the statement holds an escaped pipe
        assert cells[7].strip() == f"{v.mde:.3g}" and v.mde > 0
    assert "Verdicts: 2 inconclusive." in text
    assert "minimum detectable effect" in text and "Holm" in text


def test_a_claim_that_did_not_converge_is_rendered_and_counted(tmp_path):
    rows = make_rows({"batch_size": [16, 128], "vrns": [0.0, 30.0]}, 2,
                     {"neg_sim_var": _variance,
                      "converged": lambda axes, seed: float(not (axes["vrns"] and seed))})
    falls = {"id": "falls", "text": "falls", "metric": "neg_sim_var", "test": "decreasing",
             "along": "batch_size", "where": {"vrns": 0.0}}
    claims = [{**VRNS_LOWERS, "for_each": None}, falls]
    text, _ = _check_well_formed(_write(tmp_path, _recipe(claims=claims), rows))
    assert "| `vrns_lowers` | VRNS lowers the variance \\| at every batch | **not converged** |" \
        in text
    assert "- `vrns_lowers`: not converged: 2 of the 8 cell x seed runs" in text
    trend = evaluate_claims(_recipe(claims=claims), rows)[1]
    assert trend.verdict != "not converged"  # its runs (vrns=0.0) all converged
    assert f"Verdicts: 1 {trend.verdict}, 1 not converged." in text


def test_the_tally_puts_an_unknown_verdict_last():
    from contrastkit.experiments.report import _tally

    def verdict(word):
        return Verdict("c", "", word, 0.0, 0.0, 0.0, 2, "")

    assert _tally([verdict("not converged"), verdict("supported"), verdict("odd"),
                   verdict("supported")]) == "Verdicts: 2 supported, 1 not converged, 1 odd."
