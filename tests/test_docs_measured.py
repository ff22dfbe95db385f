"""The guides' sentences about measured results state what the committed data say.

- docs/reproduction.md: the cpu tiers' times are the recipes' measured times, and the runs it
  counts as not converged are those of the committed results (docs/reproduction/*/results.csv);
- docs/grad-cache.md, docs/training.md and the README: the figures of the runs and baselines
  they quote are those recorded in docs/measured/*.json by ``python -m benchmarks.guide_runs``.

Each sentence is rebuilt from the data and must appear in its guide (whitespace aside); a
number edited in the guide, or data measured again, fails here until the two agree.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from contrastkit.experiments import load_recipe, recipe_names

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MEASURED = DOCS / "measured"
#: The time a cpu tier is meant to fit in on 2 cores, in minutes.
TARGET_MINUTES = 45


def prose(path: Path) -> str:
    """The file's text with every run of whitespace made one space."""
    return " ".join(path.read_text().split())


def listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def tier_times_sentence() -> str:
    """How many cpu tiers run within the target, and the time of each that does not, from the
    recipes' measured times (all on 2 cores)."""
    tiers = {name: load_recipe(name).tiers for name in recipe_names()}
    measured = {name: tier["cpu"].measured for name, tier in tiers.items() if "cpu" in tier}
    assert all(m is not None and m["cores"] == 2 for m in measured.values()), measured
    over = sorted((m["minutes"], name) for name, m in measured.items()
                  if m["minutes"] > TARGET_MINUTES)
    times = [f"`{name}` {minutes:g}" for minutes, name in over]
    times[0] = times[0].replace(" ", " takes ", 1) + " minutes"
    return (f"on 2 cores, {len(measured) - len(over)} of the {len(measured)} cpu tiers run "
            f"within {TARGET_MINUTES} minutes; {listed(times)} (`--list` shows each tier's "
            f"measured time)")


def unconverged_sentence(root: Path) -> str:
    """The runs of the committed cpu tiers under ``root`` that did not converge, per recipe."""
    counts = []
    for run_json in sorted(root.glob("*-cpu/run.json")):
        with open(run_json.parent / "results.csv", newline="") as handle:
            verdicts = {(row["cell"], row["seed"]): float(row["value"])
                        for row in csv.DictReader(handle) if row["metric"] == "converged"}
        failed = sum(value == 0 for value in verdicts.values())
        if failed:
            recipe = json.loads(run_json.read_text())["recipe"]
            counts.append(f"{failed} of the {len(verdicts)} of `{recipe}`")
    return ("of the published cpu-tier runs that record it, every run converged"
            + (f" except {listed(counts)}" if counts else ""))


def test_the_reproduction_page_states_the_cpu_tiers_measured_times():
    sentence = tier_times_sentence()
    assert sentence in prose(DOCS / "reproduction.md"), \
        f"docs/reproduction.md should say (under Tiers): {sentence}"


def test_the_reproduction_page_counts_the_runs_that_did_not_converge():
    sentence = unconverged_sentence(DOCS / "reproduction")
    assert sentence in prose(DOCS / "reproduction.md"), \
        f"docs/reproduction.md should say (under Converged before judged): {sentence}"


def test_the_count_of_runs_that_did_not_converge_follows_the_results(tmp_path):
    """The sentence changes with the committed verdicts (a run judged again, a tier added)."""
    folder = tmp_path / "demo-fig1-cpu"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"recipe": "demo/fig1"}))
    rows = ["cell,seed,metric,value", "a,0,converged,1.0", "a,1,converged,0.0",
            "b,0,converged,0.0", "b,0,linear_top1,0.0"]
    (folder / "results.csv").write_text("\n".join(rows) + "\n")
    assert unconverged_sentence(tmp_path).endswith("except 2 of the 3 of `demo/fig1`")
    (folder / "results.csv").write_text("\n".join(rows[:2]) + "\n")
    assert unconverged_sentence(tmp_path).endswith("every run converged")


def measured(name: str) -> dict:
    """The record ``docs/measured/<name>.json`` written by ``benchmarks.guide_runs``."""
    return json.loads((MEASURED / f"{name}.json").read_text())


def pixel_sentences() -> dict[Path, str]:
    """Guide -> its sentence on the raw-pixel baselines, from docs/measured/pixels.json."""
    pixels = measured("pixels")
    digits, mnist = pixels["digits"], pixels["mnist5k"]
    return {
        DOCS / "training.md": (f"linear {mnist['linear_top1']:.1f} %, kNN "
                               f"{mnist['knn_top1']:.1f} % top-1 (digits: "
                               f"{digits['linear_top1']:.1f} % and {digits['knn_top1']:.1f} %)"),
        ROOT / "README.md": (f"raw pixels score {digits['linear_top1']:.1f} % and "
                             f"{digits['knn_top1']:.1f} % with the same probe and kNN"),
    }


def test_the_guides_quote_the_raw_pixel_baselines_as_measured():
    for guide, sentence in pixel_sentences().items():
        assert sentence in prose(guide), f"{guide.name} should say: {sentence}"


def grad_cache_sentences() -> list[str]:
    """The sentences of docs/grad-cache.md on its runs, from docs/measured/*.json; asserts what
    the guide says in words (the run trains well, the defaults collapse and stop)."""
    runs, pixels = measured("grad-cache")["runs"], measured("pixels")["digits"]
    large, defaults = runs["digits-b1024"], runs["digits-b1024-defaults"]
    small, sgd = runs["digits-simclr-vrns"], runs["digits-b1024-sgd"]
    collapsed = [epoch for epoch in defaults["epochs"] if epoch["collapsed_epochs"]]
    assert defaults["exit_status"] != 0 and collapsed[-1]["collapsed_epochs"] == 5
    assert large["exit_status"] == 0 and not any(e["collapsed_epochs"] for e in large["epochs"])
    assert large["eval"]["linear_top1"] > pixels["linear_top1"]  # "trains well"
    assert sgd["eval"]["linear_top1"] < pixels["linear_top1"]  # "ends below raw pixels"

    def span(key: str, digits: int) -> str:
        values = [epoch[key] for epoch in collapsed]
        return f"{min(values):.{digits}f} to {max(values):.{digits}f}"

    def top1(run: dict) -> str:
        return f"{run['eval']['linear_top1']:.1f} % (kNN {run['eval']['knn_top1']:.1f} %)"

    first, last = large["epochs"][0], large["epochs"][-1]
    minutes = (large["pretrain_seconds"] + large["evaluate_seconds"]) / 60
    return [
        large["command"],
        f"from epoch {collapsed[0]['epochs_completed']} on, the negative-pair similarity mean "
        f"is {span('neg_sim_mean', 3)} (variance "
        f"{max(epoch['neg_sim_var'] for epoch in collapsed):.4f}) and the loss "
        f"{span('loss', 1)}",
        f"the negative-pair mean falls from {first['neg_sim_mean']:.3f} to "
        f"{last['neg_sim_mean']:.3f}, the loss from {first['loss']:.1f} to {last['loss']:.1f}, "
        f"no epoch collapses",
        f"a linear-probe top-1 of {top1(large)} on the 360 held-out digits, against "
        f"{top1(small)} for the default batch-64 run and {pixels['linear_top1']:.1f} % (kNN "
        f"{pixels['knn_top1']:.1f} %) for raw pixels",
        f"{minutes:.0f} minutes for the run and its evaluation",
        f"`{next(s for s in sgd['command'].split() if s.startswith('base_lr='))}`, which this "
        f"page gave before, does not collapse but ends "
        f"below raw pixels: {top1(sgd)}",
    ]


def test_the_grad_cache_guide_quotes_its_runs_as_measured():
    text = prose(DOCS / "grad-cache.md")
    missing = [sentence for sentence in grad_cache_sentences() if sentence not in text]
    assert not missing, "docs/grad-cache.md should say:\n" + "\n".join(missing)
