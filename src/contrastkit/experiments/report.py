"""``report.md`` of a reproduction: what it reproduces and how, our numbers beside the paper's,
a verdict for every claim, the notes, and the figures (PNG files beside the report).

The report reads nothing but its arguments (the recipe, the rows, their summary, the verdicts
and the run record), so the same results and run record give the same report byte for byte
(:func:`contrastkit.experiments.reproduce.regenerate`). A tier other than ``cpu`` or
``paper``, or fewer than 3 seeds, is said at the top to be a smoke test, not evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.experiments.claim_verdict import Verdict
from contrastkit.experiments.figures import (
    FigureData,
    Undrawn,
    draw_figures,
    figure_kinds,
    missing_cell_files,
)
from contrastkit.experiments.figures.plotting import paper_setting
from contrastkit.experiments.report_claims import claims_section
from contrastkit.experiments.report_markdown import MISSING
from contrastkit.experiments.report_markdown import cell as _cell
from contrastkit.experiments.report_markdown import inline as _inline
from contrastkit.experiments.report_markdown import row as _row
from contrastkit.experiments.report_numbers import (
    VARIANCE_DIGITS,
    format_ours,
    is_variance,
    paper_decimals,
)
from contrastkit.experiments.report_setup import setup_facts
from contrastkit.experiments.results import cell_axes, same_level
from contrastkit.files import write_text_atomic

if TYPE_CHECKING:
    from .recipe import Recipe, Tier

#: A metric with more cells than this gets a sentence instead of a table (a sweep of thousands
#: of points is read from its figure and summary.csv, not from a page of rows).
MAX_TABLE_ROWS = 60
#: The tiers whose reports may count as evidence, with at least :data:`MIN_EVIDENCE_SEEDS`.
EVIDENCE_TIERS = ("cpu", "paper")
MIN_EVIDENCE_SEEDS = 3


def write_report(recipe: Recipe, tier: Tier | str, rows: Sequence[dict], summary: Sequence[dict],
                 verdicts: Sequence[Verdict], out: Path, run_info: Mapping,
                 source: Path | None = None) -> Path:
    """Write ``out/report.md`` and its figures; returns the report's path.

    Reads ``recipe.name``, ``title``, ``reproduces``, ``notes``, ``paper`` (a list of
    ``{<axis values>..., "metric", "value"}``) and, when present, ``figure`` (see
    :func:`~contrastkit.experiments.figures.figure_kinds`) and ``fixed``; ``tier`` is the
    tier's name. ``run_info`` holds ``command``, ``machine``, ``seconds`` (this call's wall time),
    ``cell_seconds`` (the cells' own run time, whichever call ran them) and ``started``, and
    may hold ``data`` (the dataset used and how far it is from the paper's), ``fixed``
    (``"steps"`` or ``"epochs"``, a tier's override of the recipe's) and ``schedule`` (cell id
    -> ``{"steps": ..., "epochs": ...}``), ``contrastkit``, ``commit``, ``source_dirty`` and
    ``python`` (the code that ran), what :func:`~.report_setup.setup_facts` reads (the
    invocations, each run's commit, the packages, the CPU, the datasets' checksums), and
    ``protocol`` (the rows of
    :func:`contrastkit.experiments.protocol.settings_table`: ``setting``, ``paper``, ``ours``,
    ``reason``); what it lacks reads "not recorded" (or, for the protocol, is left out).
    The figures read the cells' files under ``source`` (``out`` when ``None``); a figure
    whose cell files are not all there is not drawn, and the report says which it lacks
    (:func:`figures_not_drawn`).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    axes = cell_axes(rows)
    paper = list(getattr(recipe, "paper", None) or [])
    metrics = list(dict.fromkeys(entry["metric"] for entry in summary))
    kinds, data = _figure_data(recipe, rows, summary, out, source)
    figures = draw_figures(kinds, data)
    tier_name = tier if isinstance(tier, str) else tier.name
    sections = [
        _heading(recipe, tier_name, rows),
        _protocol(run_info.get("protocol"), tier_name),
        _setup(recipe, tier, rows, run_info),
        _schedule(run_info.get("schedule")),
        _results(summary, axes, _table_metrics(recipe, metrics), paper),
        claims_section(verdicts),
        _notes(getattr(recipe, "notes", None), tier, _tier_notes(recipe, tier)),
        _figures(figures, missing_cell_files(kinds, data)),
    ]
    path = out / "report.md"
    write_text_atomic(path, "\n\n".join(section for section in sections if section) + "\n")
    return path


def figures_not_drawn(recipe: Recipe, rows: Sequence[dict], summary: Sequence[dict], out: Path,
                      source: Path | None = None) -> dict[str, Undrawn]:
    """The figures of the report that :func:`write_report` leaves out for want of the cells'
    files under ``source`` (``out`` when ``None``), by name, with the files missing."""
    return missing_cell_files(*_figure_data(recipe, rows, summary, Path(out), source))


def _figure_data(recipe: Recipe, rows: Sequence[dict], summary: Sequence[dict], out: Path,
                 source: Path | None) -> tuple[list[str], FigureData]:
    """The report's figures (the recipe's ``figure``, else those its axes and metrics want)
    and what they are drawn from."""
    axes = cell_axes(rows)
    metrics = list(dict.fromkeys(entry["metric"] for entry in summary))
    kinds = figure_kinds(getattr(recipe, "figure", None), axes, metrics)
    paper = list(getattr(recipe, "paper", None) or [])
    return kinds, FigureData(summary, axes, paper, rows, out, source=source,
                             paper_setting=paper_setting(recipe))


def _heading(recipe: Recipe, tier: str, rows: Sequence[dict]) -> str:
    """The title, whether the report is evidence or a smoke test, what it reproduces."""
    title = getattr(recipe, "title", None) or recipe.name
    reproduces = getattr(recipe, "reproduces", None)
    parts = [f"# {_inline(title)}", _smoke_test(tier, rows),
             f"Reproduces {_inline(reproduces)}." if reproduces else ""]
    return "\n\n".join(part for part in parts if part)


def _smoke_test(tier: str, rows: Sequence[dict]) -> str:
    """One sentence saying that a tier other than cpu / paper, or fewer than 3 seeds, is a
    smoke test and not evidence (empty for a report that may be evidence)."""
    seeds = len({row["seed"] for row in rows})
    if tier in EVIDENCE_TIERS and seeds >= MIN_EVIDENCE_SEEDS:
        return ""
    return (f"**This report is a smoke test, not evidence:** the {tier} tier with {seeds} "
            f"seed{'s' if seeds != 1 else ''} is too small to test the paper's claims (that "
            f"takes the cpu or paper tier and at least {MIN_EVIDENCE_SEEDS} seeds), so its "
            f"verdicts only show that the pipeline runs.")


def _protocol(table: Sequence[Mapping] | None, tier: str) -> str:
    """The recipe's declared protocol, setting by setting: the paper's value, ours in this
    tier, and the declared reason where they differ."""
    if not table:
        return ""
    lines = ["## Paper setting and ours", "",
             f"Each setting of the protocol the recipe declares: the paper's value, ours in "
             f"the {tier} tier, and the recipe's reason where they differ.", "",
             f"| setting | paper | ours ({tier} tier) | why ours differs |",
             "|---|---|---|---|"]
    for row in table:
        paper, ours, reason = row.get("paper"), row.get("ours"), row.get("reason")
        if reason:
            why = reason
        elif _plain(paper) == _plain(ours):
            why = "same as the paper"
        elif _within(paper, ours):
            why = "within the paper's values"
        else:
            why = "**no reason declared**"
        lines.append(_row([row.get("setting"), _plain(paper), _plain(ours), why]))
    return "\n".join(lines)


def _within(paper: object, ours: object) -> bool:
    """Whether each of our values is one of the paper's (a list of values it ran), or, per
    loss, within the paper's value of that loss."""
    if isinstance(paper, Mapping) and isinstance(ours, Mapping):
        return all(key in paper and _within(paper[key], value) for key, value in ours.items())
    values = ours if isinstance(ours, (list, tuple)) else [ours]
    allowed = paper if isinstance(paper, (list, tuple)) else [paper]
    return all(any(same_level(value, level) for level in allowed) for value in values)


def _plain(value: object) -> str:
    """A setting's value in words: lists joined by commas, ``None`` as the missing mark."""
    if value is None:
        return MISSING
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_plain, value))
    if isinstance(value, Mapping):  # a value per loss
        return "; ".join(f"{key}: {_plain(item)}" for key, item in value.items())
    return str(value)


def _setup(recipe: Recipe, tier: Tier | str, rows: Sequence[dict], run_info: Mapping) -> str:
    """The setup table: what ran, with what, where and how long (:mod:`.report_setup`)."""
    lines = ["## Setup", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {_cell(value) if value else 'not recorded'} |"
              for name, value in setup_facts(recipe, tier, rows, run_info)]
    return "\n".join(lines)


def _schedule(schedule: Mapping | None) -> str:
    """Each cell's optimizer steps and epochs, when the runner recorded them (the pretraining
    cells; the simulations and the hard-negative runs record none)."""
    if not schedule or all(plan.get("steps") is None and plan.get("epochs") is None
                           for plan in schedule.values()):
        return ""
    lines = ["## Steps and epochs per cell", "", "| cell | steps | epochs |", "|---|---|---|"]
    lines += [f"| {_cell(cell)} | {_cell(plan.get('steps'))} | {_cell(plan.get('epochs'))} |"
              for cell, plan in schedule.items()]
    return "\n".join(lines)


def _table_metrics(recipe: Recipe, metrics: list[str]) -> list[str]:
    """The metrics the report tabulates: all but the inputs of the convergence verdicts that
    the rows hold beside ``converged`` and the recipe does not name (they stay in results.csv
    and summary.csv, to recompute the verdicts from)."""
    from .convergence import INPUTS

    if "converged" not in metrics:
        return metrics
    named = set(getattr(recipe, "metrics", ()) or ())
    return [metric for metric in metrics if metric not in INPUTS or metric in named]


def _results(summary: Sequence[dict], axes: Sequence[str], metrics: Sequence[str],
             paper: Sequence[Mapping]) -> str:
    """One table per metric, one row per cell: the paper's value and ours side by side."""
    parts = ["## Results",
             f"Ours: mean ± half-width of the 95 % t-interval over seeds (n seeds). Paper: the "
             f"paper's value; {MISSING} where the paper has no number for the cell. The "
             f"interval of a bounded metric is clipped to its range (accuracies to [0, 100] %, "
             f"shares and `converged` to [0, 1], cosine similarities to [-1, 1], variances "
             f"at 0); a clipped interval is shown "
             f"as [low, high], and summary.csv keeps the mean and standard deviation as "
             f"computed. Means carry enough digits to compare with the paper's values "
             f"(variances {VARIANCE_DIGITS} significant digits)."]
    for metric in metrics:
        entries = [entry for entry in summary if entry["metric"] == metric]
        reported = [entry for entry in paper if entry.get("metric") == metric]
        if len(entries) > MAX_TABLE_ROWS and not reported:
            parts.append(_too_many(metric, entries))
            continue
        header = [*axes, "paper", "ours (mean ± CI half-width, n)"]
        lines = [f"### {metric}", "", _row(header), _row(["---"] * len(header))]
        minimum = paper_decimals(reported)
        significant = VARIANCE_DIGITS if is_variance(metric) else None
        lines += [_row([*(entry[axis] for axis in axes), _paper_value(reported, entry, axes),
                        format_ours(entry, minimum, significant)]) for entry in entries]
        unmatched = [entry for entry in reported
                     if not any(_matches(entry, cell, axes) for cell in entries)]
        if unmatched:
            lines += ["", "The paper also reports, for cells not run in this tier: "
                      + "; ".join(f"{_where(entry)}: {entry['value']}" for entry in unmatched)
                      + "."]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _too_many(metric: str, entries: Sequence[Mapping]) -> str:
    """A metric's results in one sentence: how many cells, the range of their means."""
    means = [entry["mean"] for entry in entries]
    return (f"### {metric}\n\n{len(entries)} cells, means from {min(means):.4g} to "
            f"{max(means):.4g}: too many for a table here; each cell's mean and interval is in "
            f"summary.csv, each seed's value in results.csv.")


def _matches(paper_entry: Mapping, summary_entry: Mapping, axes: Sequence[str]) -> bool:
    named = [key for key in paper_entry if key not in ("metric", "value")]
    return all(key in axes and same_level(paper_entry[key], summary_entry[key])
               for key in named)


def _paper_value(reported: Sequence[Mapping], entry: Mapping, axes: Sequence[str]) -> str:
    found = [paper["value"] for paper in reported if _matches(paper, entry, axes)]
    return _cell(f"{found[0]:.6g}" if isinstance(found[0], float) else found[0]) if found \
        else MISSING


def _where(entry: Mapping) -> str:
    return ", ".join(f"{key}={value}" for key, value in entry.items()
                     if key not in ("metric", "value"))


def _tier_notes(recipe: Recipe, tier: Tier | str) -> str | None:
    """The notes of the tier that ran (its sizing, what it leaves out), if any."""
    spec = (getattr(recipe, "tiers", None) or {}).get(tier)
    return getattr(spec, "notes", None)


def _notes(notes: str | None, tier: Tier | str, tier_notes: str | None) -> str:
    """The recipe's notes, then those of the tier that ran."""
    parts = []
    if notes and notes.strip():
        parts.append(notes.strip())
    if tier_notes and tier_notes.strip():
        parts.append(f"The {tier} tier: {tier_notes.strip()}")
    return "## Notes\n\n" + "\n\n".join(parts) if parts else ""


def _figures(paths: Sequence[Path], undrawn: Mapping[str, Undrawn]) -> str:
    """The figures drawn, then those not drawn for want of the cells' files, and why."""
    if not paths and not undrawn:
        return ""
    parts = [f"![{path.stem.replace('_', ' ')}]({path.name})" for path in paths]
    if undrawn:
        parts.append("Not drawn, for want of the cells' files they read (the sweep's folder "
                     "holds them, and so does the evidence folder that `contrastkit reproduce "
                     "--publish` copies from it):\n\n"
                     + "\n".join(f"- `{kind}`: {why.words()}." for kind, why in undrawn.items()))
    return "## Figures\n\n" + "\n\n".join(parts)
