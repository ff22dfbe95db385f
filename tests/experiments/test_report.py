"""report.md is well formed and says what it must: the paper's values beside ours, a verdict
for every claim, the run's facts; the figures it links exist."""

from __future__ import annotations

import math
import re
import zlib
from pathlib import Path
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


def _write(tmp_path, recipe, rows, run_info=RUN_INFO, tier="quick"):
    summary = summarize(rows)
    verdicts = evaluate_claims(recipe, rows)
    return write_report(recipe, tier, rows, summary, verdicts, tmp_path, run_info)


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
    assert labels == ["ours, without VRNS", "ours, VRNS λ=30"]


def test_a_simulation_has_no_figure_and_exact_verdicts(tmp_path):
    rows = make_rows({"m": [2, 4]}, 2, {"full_neg_mean": lambda axes, seed: -1 / 7,
                                        "theory_full_neg_mean": lambda axes, seed: -1 / 7})
    claim = {"id": "optimum", "metric": "full_neg_mean", "test": "close",
             "target": "theory_full_neg_mean", "tolerance": 1e-6}
    text, links = _check_well_formed(_write(tmp_path, _recipe(claims=[claim]), rows))
    assert links == [] and "## Figures" not in text
    assert "| `optimum` | — | **supported** | 0 | — | — | — | — | 4 |" in text
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
             "along": "batch_size", "trend": "end_to_end"}
    text, _ = _check_well_formed(_write(tmp_path, _recipe(claims=[claim, falls]), rows))
    verdicts = evaluate_claims(_recipe(claims=[claim, falls]), rows)
    assert [v.verdict for v in verdicts] == ["inconclusive", "inconclusive"]
    assert ("| claim | statement | verdict | effect | d_z | raw p | adjusted p | MDE | n |"
            in text)
    for v in verdicts:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{v.claim_id}`"))
        cells = re.split(r"(?<!\\)\|", row)  # the statement holds an escaped pipe
        assert cells[8].strip() == f"{v.mde:.3g}" and v.mde > 0
        assert cells[7].strip() == f"{v.p_adjusted:.3g}"
    assert "Verdicts: 2 inconclusive." in text
    assert "minimum detectable effect" in text and "Holm" in text


def test_a_claim_that_did_not_converge_is_rendered_and_counted(tmp_path):
    rows = make_rows({"batch_size": [16, 128], "vrns": [0.0, 30.0]}, 2,
                     {"neg_sim_var": _variance,
                      "converged": lambda axes, seed: float(not (axes["vrns"] and seed))})
    falls = {"id": "falls", "text": "falls", "metric": "neg_sim_var", "test": "decreasing",
             "along": "batch_size", "trend": "end_to_end", "where": {"vrns": 0.0}}
    claims = [{**VRNS_LOWERS, "for_each": None}, falls]
    text, _ = _check_well_formed(_write(tmp_path, _recipe(claims=claims), rows))
    assert "| `vrns_lowers` | VRNS lowers the variance \\| at every batch | **not converged** |" \
        in text
    assert "- `vrns_lowers`: not converged: 2 of the 8 cell x seed runs" in text
    trend = evaluate_claims(_recipe(claims=claims), rows)[1]
    assert trend.verdict != "not converged"  # its runs (vrns=0.0) all converged
    assert f"Verdicts: 1 {trend.verdict}, 1 not converged." in text


def test_the_tally_puts_an_unknown_verdict_last():
    from contrastkit.experiments.report_claims import tally as _tally

    def verdict(word):
        return Verdict("c", "", word, 0.0, 0.0, 0.0, 2, "")

    assert _tally([verdict("not converged"), verdict("supported"), verdict("odd"),
                   verdict("supported")]) == "Verdicts: 2 supported, 1 not converged, 1 odd."


# --- evidence or smoke test, the protocol table, clipped intervals, digits ---------------------

SMOKE = "**This report is a smoke test, not evidence:**"


@pytest.mark.parametrize("tier, seeds, smoke", [("quick", 3, True), ("cpu", 2, True),
                                                ("cpu", 3, False), ("paper", 5, False)])
def test_a_quick_tier_or_few_seeds_is_called_a_smoke_test_at_the_top(tmp_path, tier, seeds,
                                                                      smoke):
    rows = make_rows({"batch_size": [16, 128]}, seeds, {"neg_sim_var": _variance})
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows, tier=tier))
    paragraphs = text.split("\n\n")
    assert (SMOKE in text) is smoke
    if smoke:
        sentence = paragraphs[1]
        assert sentence.startswith(SMOKE) and sentence.count(". ") == 0
        assert f"the {tier} tier with {seeds} seeds" in sentence


def test_the_protocol_table_puts_the_papers_setting_beside_ours_with_the_reason(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 3, {"neg_sim_var": _variance})
    protocol = [{"setting": "k", "paper": 256, "ours": 32, "reason": "a first look | fast"},
                {"setting": "lr", "paper": 0.001, "ours": 0.001, "reason": None},
                {"setting": "beta", "paper": [0, 10, 30], "ours": [0, 10], "reason": None},
                {"setting": "temperature", "paper": {"simclr": 0.2, "dcl": 0.1},
                 "ours": {"simclr": 0.5}, "reason": None}]
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows,
                                        {**RUN_INFO, "protocol": protocol}, tier="cpu"))
    assert text.index("## Paper setting and ours") < text.index("## Setup")
    assert "| setting | paper | ours (cpu tier) | why ours differs |" in text
    assert "| k | 256 | 32 | a first look \\| fast |" in text
    assert "| lr | 0.001 | 0.001 | same as the paper |" in text
    assert "| beta | 0, 10, 30 | 0, 10 | within the paper's values |" in text
    assert ("| temperature | simclr: 0.2; dcl: 0.1 | simclr: 0.5 | **no reason declared** |"
            in text)
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows, tier="cpu"))
    assert "## Paper setting and ours" not in text  # no protocol recorded


def test_the_setup_says_which_code_ran(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 2, {"neg_sim_var": _variance})
    info = {**RUN_INFO, "contrastkit": "0.1.0", "commit": "0123456789abcdef" * 2 + "01234567",
            "source_dirty": True, "python": "3.11.7"}
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows, info))
    assert ("| code | contrastkit 0.1.0, commit 0123456789ab with uncommitted changes, "
            "Python 3.11.7 |") in text
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows,
                                        {**info, "commit": None, "source_dirty": None}))
    assert "| code | contrastkit 0.1.0, not a git checkout, Python 3.11.7 |" in text


def test_a_clipped_interval_is_shown_as_its_bounds_and_the_report_says_so(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 2,
                     {"linear_top1": lambda axes, seed: [99.0, 100.0][seed]})
    text, _ = _check_well_formed(_write(tmp_path, _recipe(), rows))
    entry = summarize(rows)[0]
    assert entry["ci_high"] == 100.0 and entry["ci_low"] < 99.0
    line = next(line for line in text.splitlines() if line.startswith("| 16 |"))
    assert line.endswith(f"| 99.5 [{entry['ci_low']:.1f}, 100.0] (n=2, clipped) |")
    assert "is clipped to its range (accuracies to [0, 100] %" in text


def test_variances_carry_four_significant_digits_and_means_the_papers_decimals(tmp_path):
    rows = make_rows({"batch_size": [16, 128]}, 3, {
        "neg_sim_var": lambda axes, seed: [0.10, 0.11, 0.12][seed],
        "linear_top1": lambda axes, seed: [60.0, 61.0, 62.0][seed]})
    paper = [{"batch_size": 16, "metric": "linear_top1", "value": 51.795}]
    text, _ = _check_well_formed(_write(tmp_path, _recipe(paper=paper), rows))
    variance = text.split("### neg_sim_var")[1].split("###")[0]
    assert "| 16 | — | 0.1100 ± 0.0248 (n=3) |" in variance
    accuracy = text.split("### linear_top1")[1]
    assert "| 16 | 51.795 | 61.000 ± 2.484 (n=3) |" in accuracy


def test_a_mean_with_an_interval_of_rounding_size_shows_six_digits_to_compare_with_the_paper(
        tmp_path):
    """A loss at its bound (every seed within 1e-9 of 0.393332) against the paper's 0.3935:
    the table must tell them apart, not print 0.393 for both."""
    rows = make_rows({"batch_size": [16, 128]}, 3, {
        "train_loss": lambda axes, seed: 0.393332 + seed * 1e-9})
    paper = [{"batch_size": 16, "metric": "train_loss", "value": 0.3935}]
    text, _ = _check_well_formed(_write(tmp_path, _recipe(paper=paper), rows))
    line = next(line for line in text.splitlines() if line.startswith("| 16 | 0.3935 |"))
    mean, half = re.fullmatch(r"\| 16 \| 0\.3935 \| (\S+) ± (\S+) \(n=3\) \|", line).groups()
    assert mean == "0.393332" and 1e-10 < float(half) < 1e-8


# --- figures a reader understands at a glance ------------------------------------------------

def _draw(name, rows, axes, paper=(), setting=None, tmp_path=Path(".")):
    from contrastkit.experiments.figures import FIGURES, FigureData

    return FIGURES.get(name).draw(FigureData(summarize(rows), axes, list(paper), rows, tmp_path,
                                             paper_setting=setting))


def _assert_tick_labels_everywhere(figure):
    figure.canvas.draw()
    for panel in figure.axes:
        if not panel.axison or getattr(panel, "_colorbar", None) is not None:
            continue
        for labels in (panel.get_xticklabels(), panel.get_yticklabels()):
            assert any(label.get_visible() and label.get_text() for label in labels), (
                panel.get_title())


def test_gain_bars_draw_gains_from_zero_with_intervals_and_seeds(tmp_path):
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    def accuracy(axes, seed):  # VRNS gains 10 to 12 points: bars far from 0
        return 80.0 + 0.2 * axes["vrns"] * (1 + 0.1 * seed) + 0.5 * _noise(axes, seed)

    rows = make_rows({"loss": ["simclr", "dcl"], "batch_size": [32, 128],
                      "vrns": [0.0, 50.0]}, 3, {"linear_top1": accuracy})
    paper = [{"loss": "simclr", "batch_size": 32, "vrns": 0.0, "metric": "linear_top1",
              "value": 85.0},
             {"loss": "simclr", "batch_size": 32, "vrns": 50.0, "metric": "linear_top1",
              "value": 86.5}]
    figure = _draw("gain_bars", rows, ["loss", "batch_size", "vrns"], paper,
                   {"dataset": "CIFAR-10", "model": "ResNet-18"})
    top, bottom = figure.axes[:2], figure.axes[2:4]
    for panel in top:
        assert panel.get_ylabel() == "linear-probe top-1 accuracy (%)"
    for panel in bottom:
        assert panel.get_ylabel() == "gain (percentage points)"
        low, high = panel.get_ylim()
        assert low <= 0.0 < 10.0 < high  # the bars start at 0, the axis shows it
        bars = [c for c in panel.containers if isinstance(c, BarContainer)]
        assert len(bars) == 1 and bars[0].errorbar is not None  # 95 % intervals of the gains
        seeds = [line for line in panel.get_lines() if line.get_color() == "black"
                 and line.get_marker() == "o"]
        assert len(seeds) == 2 * 3  # a dot per batch size and seed
    labels = {label for panel in figure.axes for label in panel.get_legend_handles_labels()[1]}
    assert "paper (CIFAR-10, ResNet-18), without VRNS" in labels
    assert "paper (CIFAR-10, ResNet-18), gain" in labels
    assert "gain of VRNS λ=50" in bottom[0].get_title()
    _assert_tick_labels_everywhere(figure)
    plt.close(figure)


def test_lines_have_their_unit_one_log_base_per_axis_and_the_papers_setting(tmp_path):
    import matplotlib.pyplot as plt

    rows = make_rows({"temperature": [0.1, 0.5, 2.0], "vrns": [0.0, 30.0]}, 2,
                     {"linear_top1": _accuracy, "knn_top1": _accuracy})
    paper = [{"temperature": 0.1, "vrns": 0.0, "metric": "linear_top1", "value": 0.8}]
    figure = _draw("accuracy_vs_temperature", rows, ["temperature", "vrns"], paper,
                   {"dataset": "ImageNet-100", "model": "ResNet-50"})
    linear, knn = figure.axes
    assert linear.get_ylabel() == "linear-probe top-1 accuracy (%)"
    assert knn.get_ylabel() == "kNN top-1 accuracy (%)"
    assert "against temperature" in linear.get_title()
    assert linear.xaxis.get_transform().base == 10
    assert "paper (ImageNet-100, ResNet-50), without VRNS" in (
        linear.get_legend_handles_labels()[1])
    _assert_tick_labels_everywhere(figure)
    plt.close(figure)
    rows = make_rows({"batch_size": [16, 64, 256], "vrns": [0.0, 30.0]}, 2,
                     {"neg_sim_var": _variance})
    figure = _draw("variance_vs_batch", rows, ["batch_size", "vrns"], PAPER,
                   {"dataset": "CIFAR-100", "model": "ResNet-18"})
    panel = figure.axes[0]
    assert panel.xaxis.get_transform().base == 2
    assert [label.get_text() for label in panel.get_xticklabels()] == ["16", "64", "256",
                                                                       "512"]
    assert "paper (CIFAR-100, ResNet-18), without VRNS" in panel.get_legend_handles_labels()[1]
    assert panel.get_title().startswith("Variance of negative-pair similarities against batch")
    plt.close(figure)


def test_the_papers_setting_is_read_from_the_paper_tier():
    from contrastkit.experiments.figures.plotting import paper_label, paper_setting

    recipe = SimpleNamespace(base={"dataset": "digits", "backbone": "small_cnn"}, grid={},
                             tiers={"paper": SimpleNamespace(
                                 set={"dataset": "cifar100", "backbone": "resnet18"}, grid={})})
    assert paper_setting(recipe) == {"dataset": "CIFAR-100", "model": "ResNet-18"}
    recipe.tiers["paper"] = SimpleNamespace(set={"backbone": "resnet18"},
                                            grid={"dataset": ["cifar10", "cifar100"]})
    assert paper_setting(recipe) == {"dataset": "CIFAR-10 / CIFAR-100", "model": "ResNet-18"}
    assert paper_label(paper_setting(recipe), {"dataset": "cifar10"}) == (
        "paper (CIFAR-10, ResNet-18)")
    assert paper_setting(SimpleNamespace(tiers={})) == {}
    assert paper_label({}) == "paper"


def test_histograms_read_their_declared_cell_files_and_label_every_panel(tmp_path):
    import json

    import matplotlib.pyplot as plt

    from contrastkit.experiments.figures import FIGURES, FigureData

    rows = make_rows({"loss": ["simclr", "supcon"]}, 2, {"margin_fraction": lambda a, s: 0.5})
    for cell in ("loss=simclr", "loss=supcon"):
        for seed in (0, 1):
            folder = tmp_path / "cells" / cell / f"seed-{seed}"
            folder.mkdir(parents=True)
            histogram = {"edges": [0.0, 0.5, 1.0],
                         "counts": {"negative": [3, 1], "positive": [4, 0]}}
            (folder / "eval.json").write_text(json.dumps({"distance_histogram": histogram}))
            (folder / "config.yaml").write_text("delta_plus: 0.2\ndelta_minus: 0.6\n")
    spec = FIGURES.get("distance_histograms")
    figure = spec.draw(FigureData(summarize(rows), ["loss"], [], rows, tmp_path,
                                  cell_files=spec.cell_files))
    assert len(figure.axes) == 2 and figure.axes[0].get_xlim() == (0.0, 1.0)
    _assert_tick_labels_everywhere(figure)
    plt.close(figure)


def test_sigmoid_s_against_t_has_error_bars_and_the_theory(tmp_path):
    import matplotlib.pyplot as plt
    from matplotlib.container import ErrorbarContainer

    rows = make_rows({"N": [4, 8], "t": [0.5, 2.0]}, 2,
                     {"s_measured": lambda axes, seed: 0.5 + 0.1 * seed,
                      "s_theory": lambda axes, seed: 0.55})
    figure = _draw("sigmoid_vs_t", rows, ["N", "t"])
    panel = figure.axes[0]
    assert sum(isinstance(c, ErrorbarContainer) for c in panel.containers) == 2
    assert "Theorem 2, N = 4" in panel.get_legend_handles_labels()[1]
    _assert_tick_labels_everywhere(figure)
    plt.close(figure)


def test_the_inputs_of_the_convergence_verdicts_stay_out_of_the_tables(tmp_path):
    """Beside ``converged`` the rows hold what it was computed from; the report tabulates
    ``converged`` and the recipe's metrics, not the inputs it does not name."""
    recorded = {"converged": lambda axes, seed: 1.0, "first_loss": lambda axes, seed: 4.0,
                "half_loss": lambda axes, seed: 2.0, "linear_top1": lambda axes, seed: 90.0,
                "neg_sim_var": _variance}
    rows = make_rows({"batch_size": [16, 128]}, 2, recorded)
    text, _ = _check_well_formed(_write(tmp_path, _recipe(metrics=["neg_sim_var",
                                                                   "linear_top1"]), rows))
    tables = [line for line in text.splitlines() if line.startswith("### ")]
    assert tables == ["### converged", "### linear_top1", "### neg_sim_var"]
