"""The central paper's Table 1 in miniature, as a benchmark of a whole training run.

    python -m benchmarks.train      # about 15 min on 2 busy cores

Writes the ``train`` section of docs/benchmarks.md with ``--write-docs``.

Digits at batch 64, SimCLR with and without VRNS (lambda 30), 3 seeds; the variance of
negative-pair similarities among augmented pairs at the projector output after pretraining,
with linear-probe and kNN accuracy. Where a step's time goes is ``benchmarks/train_step.py``,
the augmentation against its peers ``benchmarks/augment.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

import torch

from benchmarks._report import add_write_docs_flag, machine_description, publish


def table1_miniature(seeds=(0, 1, 2), epochs: int = 50, batch_size: int = 64) -> list[dict]:
    """Pretrain SimCLR with and without VRNS on digits for each seed and evaluate.

    Runs with one thread: the models are tiny, and on a shared machine two threads per
    process spend most of their time waiting for each other."""
    from contrastkit.evaluate import evaluate_run
    from contrastkit.train import PretrainConfig, pretrain

    rows = []
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as runs:
        for seed in seeds:
            for weight in (0.0, 30.0):
                config = PretrainConfig(runs_dir=runs, name=f"s{seed}-v{weight:g}", seed=seed,
                                        vrns=weight, epochs=epochs, batch_size=batch_size,
                                        device="cpu", progress=False)
                pretrain(config)
                result = evaluate_run(config.run_dir, device="cpu")
                rows.append({"seed": seed, "vrns": weight, **result})
                print(f"seed {seed} vrns {weight:g}: neg var {result['neg_sim_var']:.4f}, "
                      f"linear {result['linear_top1']:.2f}, kNN {result['knn_top1']:.2f}",
                      flush=True)
    return rows


def _mean_std(values: list[float], digits: int = 2) -> str:
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=50, help="pretraining epochs")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    rows = table1_miniature(epochs=args.epochs)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.train` (pretraining epochs: {args.epochs}).", "",
             "### Table 1 in miniature: digits, batch 64, 3 seeds (mean ± sd)", "",
             "Variance of negative-pair cosine similarities among augmented pairs of all "
             "1 437 training images, at the projector output, after pretraining (the "
             "paper's Table 1 protocol at small scale); linear probe and kNN top-1 on the "
             "360 test images.", "",
             "| objective | negative-similarity variance | linear top-1 (%) | "
             "kNN top-1 (%) |", "|---|---|---|---|"]
    for weight, name in ((0.0, "SimCLR (t = 0.2)"), (30.0, "SimCLR + 30 VRNS")):
        chosen = [r for r in rows if r["vrns"] == weight]
        lines.append(f"| {name} | {_mean_std([r['neg_sim_var'] for r in chosen], 5)} | "
                     f"{_mean_std([r['linear_top1'] for r in chosen])} | "
                     f"{_mean_std([r['knn_top1'] for r in chosen])} |")
    lines += ["", "Per seed (variance without / with VRNS): " + "; ".join(
        f"seed {s}: {rows[2 * s]['neg_sim_var']:.5f} / {rows[2 * s + 1]['neg_sim_var']:.5f}"
        for s in range(3)) + "."]
    publish("train", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
