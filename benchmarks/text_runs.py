"""The text-pair main job that docs/text.md quotes, run again and recorded as data.

    python -m benchmarks.text_runs                 # about 4 minutes of CPU on one thread
    python -m benchmarks.text_runs --write-docs    # also writes docs/measured/text-pairs.json

The run is the guide's own command, ``contrastkit pretrain task=text_pairs`` then ``contrastkit
evaluate runs/paraphrases-text``, run as ``python -m contrastkit`` with ``OMP_NUM_THREADS=1`` on
the CPU in a scratch folder. Recorded: the commands, their exit status, wall time and CPU time
(user + system of the process: on a busy machine the wall time grows, the CPU time does not),
the trainer's per-epoch metrics, the figures of the run's ``eval.json`` (its histogram left
out), and the same retrieval figures of the untrained encoder (the run's initialization, its
seed) on the same test split. tests/test_docs_text.py checks the guide's figures against the
file.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

from benchmarks._report import machine_description
from benchmarks.guide_runs import EPOCH_KEYS, MEASURED, contrastkit, dumps, publish_measured

RUN = "paraphrases-text"
FILE = "text-pairs.json"


def cpu_seconds() -> float:
    """User + system time of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], folder: Path) -> dict:
    """Run ``python -m contrastkit ARGS`` in ``folder``: its command, status, wall and CPU
    seconds."""
    before = cpu_seconds()
    status, seconds = contrastkit(args, folder)
    if status != 0:
        raise SystemExit(f"text_runs: contrastkit {' '.join(args)} failed (exit status "
                         f"{status})")
    return {"command": "contrastkit " + " ".join(args), "exit_status": status,
            "wall_seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds() - before, 1)}


def untrained(config) -> dict:
    """The retrieval figures of the run's encoder before training."""
    from contrastkit.data import load_dataset
    from contrastkit.evaluate.text_pairs import text_pair_measurements
    from contrastkit.train.checkpoint import seed_everything
    from contrastkit.train.text_pairs import build_sentence_model

    seed_everything(config.seed)  # as pretrain does before building the encoder
    encoder = build_sentence_model(config)
    train, test = (load_dataset(config.dataset, split) for split in ("train", "test"))
    figures = text_pair_measurements(encoder, train, test, "cpu", pairs=2)
    return {key: value for key, value in figures.items() if key.startswith("query_to_corpus")}


def measure(folder: Path) -> dict:
    """Pretrain and evaluate the main job in ``folder``; its record (module docstring)."""
    from contrastkit.train import PretrainConfig

    pretrain = timed(["pretrain", "task=text_pairs", "--no-progress"], folder)
    evaluate = timed(["evaluate", f"runs/{RUN}", "--no-progress"], folder)
    run = folder / "runs" / RUN
    with open(run / "metrics.jsonl") as handle:
        epochs = [json.loads(line) for line in handle if line.strip()]
    figures = json.loads((run / "eval.json").read_text())
    figures.pop("distance_histogram", None)
    figures.pop("run", None)
    config = PretrainConfig().with_overrides({"task": "text_pairs"})
    return {"pretrain": pretrain, "evaluate": evaluate,
            "epochs": [{key: epoch[key] for key in EPOCH_KEYS if key in epoch}
                       for epoch in epochs],
            "eval": figures, "untrained": untrained(config)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.text_runs",
        description="Run the text-pair main job docs/text.md quotes and record it.")
    parser.add_argument("--out", type=Path, default=None,
                        help="scratch folder for the run (default: a temporary folder)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"also write {MEASURED.parent.name}/{MEASURED.name}/{FILE} "
                             "(default: print only)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        record = {"command": "python -m benchmarks.text_runs", "machine": machine_description(),
                  "threads": 1, "device": "cpu", **measure(folder)}
    publish_measured(FILE, dumps(record), args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
