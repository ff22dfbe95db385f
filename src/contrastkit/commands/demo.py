"""``contrastkit demo``: every loss on a simplex ETF and on random embeddings, as a table."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="evaluate every loss on a simplex ETF and on random embeddings",
        description=(
            "Evaluate every registered contrastkit loss and regularizer on the full-batch "
            "optimum of Theorem 5.1 (positive pairs aligned, the n embeddings forming a "
            "simplex ETF) and on random embeddings of the same size, each with its default "
            "hyperparameters. The optimum has the lower value for every loss."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=16, help="number of positive pairs")
    parser.add_argument("--d", type=int, default=32, help="embedding dimension (>= n - 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random embeddings")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from contrastkit import losses, theory

    etf = torch.from_numpy(theory.simplex_etf(args.n, args.d))
    generator = torch.Generator().manual_seed(args.seed)
    random_u = torch.randn(args.n, args.d, generator=generator, dtype=torch.float64)
    random_v = torch.randn(args.n, args.d, generator=generator, dtype=torch.float64)
    labels = torch.arange(args.n)  # each pair its own class
    table = {}
    for name in losses.names(regularizers=True):
        cls = losses.get(name)
        loss = losses.build(name, {"n": args.n}, **cls.training_options)
        shown = ", ".join(f"{key}={value:g}" for key, value in loss.settings().items())
        table[f"{name} ({shown})" if shown else name] = (
            lambda u, v, loss=loss: loss(u, v, labels if loss.uses_labels else None))
    width = max(len(name) for name in table)
    print(f"{'loss':<{width}}  {'simplex ETF':>12}  {'random':>12}")
    for name, compute in table.items():
        optimum, random = float(compute(etf, etf)), float(compute(random_u, random_v))
        print(f"{name:<{width}}  {optimum:>12.6f}  {random:>12.6f}")
    print(f"\n{args.n} pairs in d = {args.d}; simplex ETF: positive similarity 1, "
          f"negative similarity -1/(n-1) = {-1 / (args.n - 1):.6f} (Theorem 5.1).")
    return 0
