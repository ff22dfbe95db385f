"""docs/text.md states what the code and the committed measurement say: the text-pair preset and
the bundled corpus as configured, and the main job's figures as docs/measured/text-pairs.json
records them (``python -m benchmarks.text_runs --write-docs`` measures them again)."""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.data.paraphrases import FACTS, TEST_QUERIES, TRAIN_ROWS
from contrastkit.train.config import PretrainConfig
from contrastkit.train.tasks import TASK_PRESETS

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "text.md"
RECORD = ROOT / "docs" / "measured" / "text-pairs.json"


def prose() -> str:
    return " ".join(GUIDE.read_text().split())


def test_the_guide_quotes_the_measured_main_job():
    record = json.loads(RECORD.read_text())
    assert record["pretrain"]["command"] == "contrastkit pretrain task=text_pairs --no-progress"
    assert record["evaluate"]["command"].startswith("contrastkit evaluate runs/paraphrases-text")
    preset = TASK_PRESETS["text_pairs"]
    steps = len(record["epochs"]) * (TRAIN_ROWS // preset["batch_size"])
    trained, untrained = record["eval"], record["untrained"]
    sentence = (
        f"the run's {steps} steps took {record['pretrain']['cpu_seconds'] / 60:.1f} minutes of "
        f"CPU time, and `contrastkit evaluate` printed R@1 {trained['query_to_corpus_r1']:.1f} %, "
        f"R@10 {trained['query_to_corpus_r10']:.1f} % and nDCG@10 "
        f"{trained['query_to_corpus_ndcg10']:.3f} on the {trained['retrieval_queries']} held-out "
        f"queries; the same encoder untrained scores R@1 {untrained['query_to_corpus_r1']:.1f} %, "
        f"R@10 {untrained['query_to_corpus_r10']:.1f} % and nDCG@10 "
        f"{untrained['query_to_corpus_ndcg10']:.3f}.")
    assert sentence in prose(), sentence
    assert len(record["epochs"]) == preset["epochs"]


def short(value: float) -> str:
    """A learning rate as the guide writes it: ``2e-3``."""
    return f"{value:.0e}".replace("e-0", "e-")


def test_the_guide_describes_the_preset_and_the_corpus_as_configured():
    preset = TASK_PRESETS["text_pairs"]
    text = prose()
    lr = preset["base_lr"] * preset["batch_size"] / 256
    warmup = 100 * preset["warmup_share"]
    for stated in (f"InfoNCE at temperature {preset['temperature']:g}",
                   f"AdamW at lr {short(lr)} (`base_lr={short(preset['base_lr'])}` per 256 "
                   f"rows, batch {preset['batch_size']}, a warm-up over {warmup:g} % of the "
                   f"steps), {preset['epochs']} epochs",
                   f"transformer of width {PretrainConfig.text_width} over byte tokens "
                   f"(`context_length={PretrainConfig.context_length}`)",
                   f"projected linearly to {PretrainConfig.projector_out} dimensions",
                   f"({FACTS:,} of them)".replace(",", " "),
                   f"The test split holds {TEST_QUERIES} queries",
                   f"({2 * TEST_QUERIES:,} documents".replace(",", " "),
                   f"len(load_paraphrases(\"train\")) == {TRAIN_ROWS:_}"):
        assert stated in text, stated
    assert preset["loss"] == "info_nce" and preset["optimizer"] == "adamw"


MINED = ROOT / "docs" / "measured" / "mined-negatives.json"


def mined_sentence(record: dict) -> str:
    """What docs/text.md says of the mined negatives' measurement, from its record."""
    summary, seeds = record["summary"], record["seeds"]

    def arm(name: str) -> str:
        figures = summary[name]
        return (f"{figures['ndcg10_mean']:.3f} (paired difference "
                f"{figures['mean_difference']:+.3f}, {figures['seeds_above_base']} of "
                f"{len(seeds)} seeds above, one-sided paired t-test p = "
                f"{figures['p_one_sided']:.3f})")

    return (f"a miner trained for {record['epochs']} epoch on the bundled corpus mined one "
            f"negative per training row (the row's distractor kept), and the same run "
            f"retrained on the rows with seeds {', '.join(map(str, seeds))} reached a mean "
            f"nDCG@10 on the {TEST_QUERIES} held-out queries of "
            f"{summary['base']['ndcg10_mean']:.3f} without mined negatives, "
            f"{arm('mined')} with them, and {arm('mined-margin')} with them mined "
            f"under `--margin 0.05`.")


def test_the_guide_quotes_the_measured_mined_negatives():
    record = json.loads(MINED.read_text())
    assert record["command"] == "python -m benchmarks.mine_quality"
    assert set(record["summary"]) == {"base", "mined", "mined-margin"}
    sentence = mined_sentence(record)
    assert sentence in prose(), sentence
    unfiltered = record["mining"]["mined"]["record"]
    filtered = record["mining"]["mined-margin"]["record"]
    scores = (f"mean cosine {unfiltered['negative_score_mean']:.3f} to its anchor, above the "
              f"positives' {unfiltered['positive_score_mean']:.3f}; under the margin, "
              f"{filtered['negative_score_mean']:.3f}")
    assert scores in prose(), scores
