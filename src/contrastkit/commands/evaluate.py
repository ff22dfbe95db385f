"""``contrastkit evaluate RUN``: linear probe, kNN and negative-similarity variance of a run."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="linear probe, kNN and negative-similarity variance of a pretraining run",
        description=(
            "Evaluate the encoder of a pretraining run with the paper's protocol (App. D): a "
            "linear probe on frozen, L2-normalized backbone features (SGD lr 0.1, no weight "
            "decay, batch 256) and a kNN classifier (cosine, temperature-weighted), top-1 and "
            "top-5 on the test split; and the variance of negative-pair similarities among "
            "augmented positive pairs at the projector output (Table 1). Results go to "
            "RUN/eval.json."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN", help="the run folder (runs/<name>)")
    parser.add_argument("--checkpoint", default="last", choices=("last", "previous"))
    parser.add_argument("--linear-epochs", type=int, default=100)
    parser.add_argument("--knn-k", type=int, default=200)
    parser.add_argument("--knn-temperature", type=float, default=0.1)
    parser.add_argument("--pairs", type=int, default=5000,
                        help="augmented positive pairs for the similarity variance")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contrastkit.evaluate import evaluate_run

    try:
        results = evaluate_run(args.run_dir, args.checkpoint, args.linear_epochs, args.knn_k,
                               args.knn_temperature, args.pairs, args.device, args.seed)
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    print(f"run {results['run']} ({results['epochs_completed']} epochs completed)")
    print(f"  linear probe  top-1 {results['linear_top1']:6.2f} %   "
          f"top-5 {results['linear_top5']:6.2f} %")
    print(f"  kNN (k={args.knn_k})   top-1 {results['knn_top1']:6.2f} %   "
          f"top-5 {results['knn_top5']:6.2f} %")
    print(f"  negative-pair similarity over {results['pairs']} augmented pairs: "
          f"variance {results['neg_sim_var']:.4f}, mean {results['neg_sim_mean']:.4f}")
    print(f"  written to {args.run_dir}/eval.json")
    return 0
