"""Do mined hard negatives raise held-out nDCG? Measured on the bundled paraphrase corpus.

    python -m benchmarks.mine_quality               # about 25 minutes of CPU on one thread
    python -m benchmarks.mine_quality --write-docs  # also writes docs/measured/mined-negatives.json
    python -m benchmarks.mine_quality --jobs 2      # two training runs at a time

In a scratch folder, with ``python -m contrastkit`` on one thread of the CPU:

1. the bundled corpus is written as a pairs folder (``base/``: its 20 000 training rows, anchor,
   positive and the distractor, and its 500 held-out queries), so that every run reads the same
   rows through ``dataset=text_files``;
2. a miner is trained on it: ``task=text_pairs`` for one epoch (the main job's settings, half
   its length), seed 0;
3. ``contrastkit mine`` gives every training row one more negative, mined by the miner from the
   rows' positives and distractors, the row's distractor kept (``--negatives 1
   --keep-negatives``): once without a filter (``mined/``), once with ``--margin 0.05`` (a
   candidate scores at least 0.05 below the row's positive: ``mined-margin/``), set before any
   result was seen;
4. for each seed, the same one-epoch run is trained on ``base/``, ``mined/`` and
   ``mined-margin/`` and evaluated (``contrastkit evaluate``: the 500 held-out queries).

Recorded: every command with its CPU time, the mining records, each run's retrieval figures,
and per arm the mean nDCG@10 and its paired difference from ``base`` (per seed, mean, and a
one-sided paired t-test). tests/test_docs_text.py checks docs/text.md's statement against the
file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks._report import machine_description
from benchmarks.guide_runs import MEASURED, publish_measured

FILE = "mined-negatives.json"
EPOCHS = 1
MINER_SEED = 0
SEEDS = (1, 2, 3)
#: The arms: the folder each trains on, and how ``contrastkit mine`` made it (None: not mined).
MINING = {"base": None,
          "mined": ["--negatives", "1", "--keep-negatives"],
          "mined-margin": ["--negatives", "1", "--keep-negatives", "--margin", "0.05"]}
FIGURES = ("query_to_corpus_ndcg10", "query_to_corpus_mrr10", "query_to_corpus_r1",
           "query_to_corpus_r10")


def timed(args: list[str], folder: Path) -> dict:
    """Run ``python -m contrastkit ARGS`` in ``folder`` on one thread: its command, status,
    wall and CPU seconds (user + system of that process alone, so runs may go side by
    side)."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "contrastkit", *args], cwd=folder,
                               env={**os.environ, "OMP_NUM_THREADS": "1"},
                               stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"mine_quality: contrastkit {' '.join(args)} failed (exit status "
                         f"{process.returncode})")
    return {"command": "contrastkit " + " ".join(args), "exit_status": process.returncode,
            "wall_seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1)}


def pretrain_args(folder: str, name: str, seed: int) -> list[str]:
    return ["pretrain", "task=text_pairs", "dataset=text_files", f"data_dir={folder}",
            f"epochs={EPOCHS}", f"seed={seed}", f"name={name}", "--no-progress"]


def export_corpus(folder: Path) -> None:
    """The bundled corpus as the pairs folder ``folder/base``."""
    from contrastkit.data import load_paraphrases, write_text_file

    for split in ("train", "test"):
        write_text_file(load_paraphrases(split), folder / "base" / f"{split}.jsonl")


def trained(folder: Path, arm: str, seed: int) -> dict:
    """Train and evaluate one run on the arm's folder: its commands and figures."""
    name = f"{arm}-s{seed}"
    pretrain = timed(pretrain_args(arm, name, seed), folder)
    evaluate = timed(["evaluate", f"runs/{name}", "--no-progress"], folder)
    figures = json.loads((folder / "runs" / name / "eval.json").read_text())
    return {"pretrain": pretrain, "evaluate": evaluate,
            **{key: figures[key] for key in FIGURES}}


def paired(base: list[float], arm: list[float]) -> dict:
    """The arm's differences from base, seed by seed, their mean and a one-sided paired t-test
    (the arm above base)."""
    from scipy import stats

    differences = [b - a for a, b in zip(base, arm, strict=True)]
    test = stats.ttest_rel(arm, base, alternative="greater")
    return {"differences": differences, "mean_difference": statistics.fmean(differences),
            "seeds_above_base": sum(d > 0 for d in differences),
            "t_statistic": None if math.isnan(test.statistic) else float(test.statistic),
            "p_one_sided": None if math.isnan(test.pvalue) else float(test.pvalue)}


def measure(folder: Path, jobs: int = 1) -> dict:
    """The whole comparison in ``folder`` (module docstring), ``jobs`` runs at a time."""
    export_corpus(folder)
    miner = timed(pretrain_args("base", "miner", MINER_SEED), folder)
    mining = {}
    for arm, options in MINING.items():
        if options is not None:
            command = timed(["mine", "runs/miner", *options, "--out", arm, "--device", "cpu",
                             "--no-progress"], folder)
            mining[arm] = {**command, "record": json.loads((folder / arm / "mining.json")
                                                           .read_text())}
    cells = [(arm, seed) for seed in SEEDS for arm in MINING]
    with ThreadPoolExecutor(jobs) as pool:
        done = dict(zip(cells, pool.map(lambda cell: trained(folder, *cell), cells),
                        strict=True))
    runs = {arm: {str(seed): done[arm, seed] for seed in SEEDS} for arm in MINING}
    ndcg = {arm: [runs[arm][str(seed)]["query_to_corpus_ndcg10"] for seed in SEEDS]
            for arm in MINING}
    summary = {arm: {"ndcg10_mean": statistics.fmean(values),
                     **({} if arm == "base" else paired(ndcg["base"], values))}
               for arm, values in ndcg.items()}
    return {"epochs": EPOCHS, "miner_seed": MINER_SEED, "seeds": list(SEEDS), "miner": miner,
            "mining": mining, "runs": runs, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mine_quality",
        description="Train a miner on the bundled corpus, mine negatives with it, retrain with "
                    "and without them and compare held-out nDCG@10.")
    parser.add_argument("--out", type=Path, default=None,
                        help="scratch folder for the runs (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="training runs side by side (each on one thread)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"also write {MEASURED.parent.name}/{MEASURED.name}/{FILE} "
                             "(default: print only)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        record = {"command": "python -m benchmarks.mine_quality",
                  "machine": machine_description(), "threads": 1, "device": "cpu",
                  **measure(folder, args.jobs)}
    publish_measured(FILE, json.dumps(record, indent=1) + "\n", args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
