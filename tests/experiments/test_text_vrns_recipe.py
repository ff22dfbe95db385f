"""beyond/text-vrns: its cells are text-pair runs on the small paraphrase corpus that record
their held-out nDCG@10 per epoch, and a text-pair recipe cell runs through the runner: it is
evaluated by retrieval and judged on its curves, the held-out nDCG@10 among them, with no
half-way linear probe (a sentence encoder has none)."""

from __future__ import annotations

import json

import pytest

import tests.train.tiny_text  # noqa: F401  (registers tiny_paraphrases)
from contrastkit.data import load_dataset
from contrastkit.data.paraphrases import SMALL_TRAIN_ROWS
from contrastkit.experiments import load_recipe, recipe_names, reproduce
from contrastkit.experiments.convergence_record import RECORD
from tests.experiments.tiny_recipes import write_recipe
from tests.train.tiny_text import TINY

NAME = "beyond/text-vrns"


def test_it_is_shipped_and_its_cells_are_text_pair_runs_that_record_held_out_ndcg():
    assert NAME in recipe_names()
    cells = load_recipe(NAME).cells("cpu")
    assert len(cells) == 4 * 3
    assert {(cell.settings["task"], cell.settings["dataset"], cell.settings["online_probe"])
            for cell in cells} == {("text_pairs", "paraphrases_small", True)}
    assert {(cell.settings["batch_size"], cell.settings["vrns"]) for cell in cells} == {
        (16, 0.0), (16, 30.0), (64, 0.0), (64, 30.0)}


def test_the_small_corpus_has_its_rows_and_the_full_corpus_s_test_split():
    assert len(load_dataset("paraphrases_small", "train")) == SMALL_TRAIN_ROWS
    small, full = (load_dataset(name, "test") for name in ("paraphrases_small", "paraphrases"))
    assert small.texts == full.texts


@pytest.mark.parametrize("tier", ["quick", "cpu", "paper"])
def test_every_cell_builds(tier, tmp_path):
    result = reproduce(NAME, tier, out=tmp_path, dry_run=True, progress=False)
    assert result.dry_run and len(result.cells) == len(load_recipe(NAME).cells(tier))


TEXT_RECIPE = {
    "title": "Tiny text pairs",
    "reproduces": "nothing: a test recipe",
    "kind": "pretrain",
    "fixed": "epochs",
    "base": {"task": "text_pairs", "dataset": TINY, "online_probe": True, "batch_size": 16,
             "projector_out": 16, "text_width": 32, "text_layers": 1, "device": "cpu"},
    "grid": {"vrns": [30.0]},
    "metrics": ["query_to_corpus_ndcg10", "query_to_corpus_r1", "neg_sim_var"],
    "evaluate": {"pairs": 32},
    # 9 epochs: the fewest whose second half has the 5 points a curve is fitted to
    "tiers": {tier: {"seeds": 1, "estimate_minutes": 0.5, "set": {"epochs": 9}}
              for tier in ("quick", "cpu", "paper")},
}


def test_a_text_pair_cell_is_evaluated_by_retrieval_and_judged_on_its_ndcg_curve(tmp_path):
    path = write_recipe(tmp_path, TEXT_RECIPE)
    result = reproduce(str(path), "quick", out=tmp_path / "out", progress=False)
    rows = {(row["cell"], row["seed"], row["metric"]): row["value"] for row in result.rows}
    cell, seed = "vrns=30.0", 0
    run_dir = tmp_path / "out" / "cells" / cell / f"seed-{seed}"
    curve = [json.loads(line)["online_ndcg10"]
             for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(curve) == 9
    assert rows[cell, seed, "query_to_corpus_ndcg10"] == pytest.approx(curve[-1], rel=1e-6)
    assert (cell, seed, "drift_online_ndcg10") in rows and (cell, seed, "converged") in rows
    assert (cell, seed, "half_linear_top1") not in rows
    assert not (run_dir / RECORD).exists()  # no half-way linear probe
