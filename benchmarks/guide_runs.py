"""The training runs and baselines that the guides quote, run again and recorded as data.

    python -m benchmarks.guide_runs                 # about 15 minutes on one CPU thread
    python -m benchmarks.guide_runs --write-docs    # also writes docs/measured/*.json

docs/grad-cache.md quotes a batch-1 024 run by gradient caching, the same batch at the default
settings (which collapses) and with plain SGD, and the default batch-64 run; docs/grad-cache.md,
docs/training.md
and the README quote the raw-pixel baselines of the exact linear probe and kNN. Each run is the
guide's own command, run as ``python -m contrastkit`` with ``OMP_NUM_THREADS=1`` on the CPU in a
scratch folder. Recorded: the command, its exit status and wall time, the trainer's per-epoch
loss, learning rate, negative-pair similarity mean and variance and collapse count, and the
figures of the run's ``eval.json`` (its histogram left out); for the baselines, the probes' top-1
on flattened pixels. tests/test_docs_measured.py checks the guides' figures against these
files. The baselines need MNIST-5k: ``pip install "contrastkit[data]"``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._report import machine_description

MEASURED = Path(__file__).resolve().parent.parent / "docs" / "measured"
#: Run name -> the ``contrastkit pretrain`` settings the guide gives (a name of its own).
RUNS = {
    "digits-b1024": ["batch_size=1024", "grad_cache_chunk=64", "optimizer=lars", "epochs=100",
                     "warmup_share=0.1"],
    "digits-b1024-defaults": ["batch_size=1024", "grad_cache_chunk=64"],
    "digits-b1024-sgd": ["batch_size=1024", "grad_cache_chunk=64", "base_lr=0.075", "epochs=100",
                         "warmup_share=0.1"],
    "digits-simclr-vrns": [],
}
#: The per-epoch metrics kept of each run's metrics.jsonl.
EPOCH_KEYS = ("epochs_completed", "lr", "loss", "neg_sim_mean", "neg_sim_var", "collapsed_epochs")
PIXEL_DATASETS = ("digits", "mnist5k")


def contrastkit(args: list[str], folder: Path) -> tuple[int, float]:
    """Run ``python -m contrastkit ARGS`` in ``folder`` on one thread: exit status, seconds."""
    start = time.perf_counter()
    status = subprocess.run([sys.executable, "-m", "contrastkit", *args], cwd=folder,
                            env={**os.environ, "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.DEVNULL).returncode
    return status, time.perf_counter() - start


def measure_run(name: str, settings: list[str], folder: Path) -> dict:
    """Pretrain and evaluate one run; its record (see the module docstring)."""
    pretrain = ["pretrain", *settings, f"name={name}"] if settings else ["pretrain"]
    status, pretrain_seconds = contrastkit(pretrain, folder)
    run = folder / "runs" / name
    evaluate_status, evaluate_seconds = contrastkit(["evaluate", f"runs/{name}"], folder)
    if evaluate_status != 0:
        raise SystemExit(f"guide_runs: contrastkit evaluate runs/{name} failed "
                         f"(exit status {evaluate_status})")
    with open(run / "metrics.jsonl") as handle:
        epochs = [json.loads(line) for line in handle if line.strip()]
    figures = json.loads((run / "eval.json").read_text())
    figures.pop("distance_histogram", None)
    return {"command": "contrastkit " + " ".join(pretrain), "exit_status": status,
            "pretrain_seconds": round(pretrain_seconds, 1),
            "evaluate_seconds": round(evaluate_seconds, 1),
            "epochs": [{key: epoch[key] for key in EPOCH_KEYS if key in epoch}
                       for epoch in epochs],
            "eval": figures}


def pixel_baselines() -> dict:
    """Top-1 (%) of the exact linear probe and of kNN (k = 200) on each dataset's flattened
    pixels, scaled to [0, 1]."""
    from contrastkit.data import load_dataset
    from contrastkit.evaluate import knn_accuracy, linear_probe

    found = {}
    for dataset in PIXEL_DATASETS:
        train, test = load_dataset(dataset, "train"), load_dataset(dataset, "test")
        data = (train.images.flatten(1).float() / 255, train.labels,
                test.images.flatten(1).float() / 255, test.labels, train.info.num_classes)
        found[dataset] = {"linear_top1": linear_probe(*data)["top1"],
                          "knn_top1": knn_accuracy(*data, k=200)["top1"], "knn_k": 200}
    return found


def publish_measured(file: str, text: str, write_docs: bool) -> None:
    """Print ``text`` under its file name and, with ``write_docs``, write it to
    ``docs/measured/<file>``."""
    print(f"{file}:\n{text}")
    if write_docs:
        MEASURED.mkdir(exist_ok=True)
        (MEASURED / file).write_text(text)
        print(f"wrote {MEASURED / file}")


def dumps(record: dict) -> str:
    """``record`` as indented JSON, with each epoch's metrics on one line."""
    lines, runs = {}, {}
    for name, run in record.get("runs", {}).items():
        keys = [f"@{name}-{index}@" for index in range(len(run["epochs"]))]
        lines.update(zip(keys, map(json.dumps, run["epochs"]), strict=True))
        runs[name] = {**run, "epochs": keys}
    text = json.dumps({**record, **({"runs": runs} if runs else {})}, indent=1)
    for key, line in lines.items():
        text = text.replace(json.dumps(key), line)
    return text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.guide_runs",
        description="Run the training runs and baselines the guides quote and record them.")
    parser.add_argument("--out", type=Path, default=None,
                        help="scratch folder for the runs (default: a temporary folder)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"also write {MEASURED.parent.name}/{MEASURED.name}/grad-cache.json "
                             "and pixels.json (default: print only)")
    args = parser.parse_args(argv)
    common = {"command": "python -m benchmarks.guide_runs", "machine": machine_description(),
              "threads": 1, "device": "cpu"}
    pixels = {**common, **pixel_baselines()}  # first: it fails at once without MNIST-5k
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        runs = {**common, "runs": {name: measure_run(name, settings, folder)
                                   for name, settings in RUNS.items()}}
    for file, record in (("grad-cache.json", runs), ("pixels.json", pixels)):
        publish_measured(file, dumps(record), args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
