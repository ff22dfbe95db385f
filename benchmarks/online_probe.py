"""What ``pretrain online_probe=true`` costs, and how its numbers compare with ``evaluate``'s.

    OMP_NUM_THREADS=1 python -m benchmarks.online_probe              # about 5 min on 2 cores
    OMP_NUM_THREADS=1 python -m benchmarks.online_probe --write-docs # also rewrite the section

1. **Cost.** The main job (digits, SimCLR + 30 VRNS, batch 64) for ``--epochs`` epochs with and
   without the probe, in ``--rounds`` interleaved rounds (each round one run of each, the order
   alternating), timed in process CPU seconds, which the other processes of a shared machine
   do not inflate; the ratio is taken within each round and its median reported, beside the
   probe's own share of each epoch (``online_probe_seconds`` over the epoch's training
   seconds, medians over the probed runs' epochs).
2. **What it measures.** The probed run's last online top-1 against ``contrastkit evaluate``'s
   linear probe (exact L-BFGS) and kNN of the same encoder.
3. **The head's input.** A fresh head (zero, the probe's SGD) trained for 1 and 10 passes on
   the final encoder's training features, standardized (what the probe does) or L2-normalized
   (the offline probe's input), scored on the test split.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks._report import add_write_docs_flag, machine_description, publish

PASSES = (1, 10)


def measure_cost(runs: Path, epochs: int, rounds: int
                 ) -> tuple[list[float], list[dict], torch.nn.Module]:
    """The per-round ratios of the probed run's CPU seconds to the plain run's, the probed
    runs' metrics (every epoch of every round) and the last probed run's encoder."""
    from contrastkit.train import PretrainConfig, pretrain

    ratios, probed_epochs = [], []
    for round_ in range(rounds):
        seconds, order = {}, (False, True) if round_ % 2 == 0 else (True, False)
        for probed in order:
            config = PretrainConfig(runs_dir=str(runs), name=f"r{round_}-{probed}",
                                    epochs=epochs, device="cpu", progress=False,
                                    online_probe=probed, logger="none")
            start = time.process_time()
            result = pretrain(config)
            seconds[probed] = time.process_time() - start
            if probed:
                probed_epochs += result.history
                encoder = result.encoder
        ratios.append(seconds[True] / seconds[False])
        print(f"round {round_ + 1}: {seconds[False]:.1f} s without, {seconds[True]:.1f} s "
              f"with the probe ({ratios[-1]:.3f}x)", flush=True)
    return ratios, probed_epochs, encoder


def head_inputs(encoder: torch.nn.Module) -> dict[str, list[float]]:
    """Test top-1 of a fresh head after each of :data:`PASSES` passes, on standardized and on
    L2-normalized digits features of ``encoder``."""
    from contrastkit.data import load_dataset
    from contrastkit.evaluate.online import OnlineProbe, standardized
    from contrastkit.rows import unit_rows

    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    scores = {}
    for name in ("standardized", "L2-normalized"):
        probe = OnlineProbe(train, test, train.info.num_classes)
        train_x, train_y = probe.features(encoder, train)
        test_x, test_y = probe.features(encoder, test)
        if name == "standardized":
            train_x, test_x = standardized(train_x, test_x)
        else:
            train_x, test_x = unit_rows(train_x), unit_rows(test_x)
        scores[name] = []
        for passes in range(1, max(PASSES) + 1):
            probe._train_head(train_x, train_y)
            if passes in PASSES:
                with torch.no_grad():
                    hits = probe.head(test_x).argmax(dim=1) == test_y
                scores[name].append(100.0 * hits.float().mean().item())
    return scores


def report(epochs: int, rounds: int, ratios: list[float], probed: list[dict], offline: dict,
           inputs: dict[str, list[float]]) -> str:
    share = statistics.median(m["online_probe_seconds"] / m["epoch_seconds"] for m in probed)
    per_epoch = statistics.median(m["online_probe_seconds"] for m in probed)
    last = probed[-1]
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.online_probe` (digits, the main "
             f"job's settings, {epochs} epochs, {rounds} interleaved rounds, process CPU "
             f"time).", "",
             "| | value |", "|---|---|",
             f"| whole run with the probe / without (median of {rounds} rounds) | "
             f"{statistics.median(ratios):.3f}x (rounds: "
             f"{', '.join(f'{r:.3f}' for r in ratios)}) |",
             f"| the probe's seconds per epoch (median) | {per_epoch:.3f} s, "
             f"{100 * share:.1f} % of the epoch's training |",
             f"| last epoch: online linear / kNN top-1 | {last['online_linear_top1']:.2f} % / "
             f"{last['online_knn_top1']:.2f} % |",
             f"| the same encoder, `contrastkit evaluate`: linear (L-BFGS) / kNN top-1 | "
             f"{offline['linear_top1']:.2f} % / {offline['knn_top1']:.2f} % |", "",
             "A fresh head trained on the final encoder's 1 437 training features, scored on "
             "the 360 test images (top-1, %):", "",
             "| the head reads | " + " | ".join(f"{p} pass{'es' if p > 1 else ''}"
                                               for p in PASSES) + " |",
             "|---|" + "---|" * len(PASSES)]
    for name, values in inputs.items():
        lines.append(f"| {name} features | " + " | ".join(f"{v:.1f}" for v in values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from contrastkit.evaluate import measure_run

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10, help="pretraining epochs per run")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as runs:
        ratios, probed, encoder = measure_cost(Path(runs), args.epochs, args.rounds)
        offline = measure_run(Path(runs) / f"r{args.rounds - 1}-True", device="cpu",
                              progress=False)
    inputs = head_inputs(encoder)
    publish("online_probe", report(args.epochs, args.rounds, ratios, probed, offline, inputs),
            args.write_docs)


if __name__ == "__main__":
    main()
