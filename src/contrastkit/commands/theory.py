"""``contrastkit theory``: instant answers from the papers' theorems."""

from __future__ import annotations

import argparse
import math


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "theory",
        help="optimal geometries and bounds from the papers' theorems",
        description="Closed forms, bounds and optimal geometries (contrastkit.theory).",
    )
    sub = parser.add_subparsers(dest="theory_command", metavar="QUESTION", required=True)
    formatter = argparse.ArgumentDefaultsHelpFormatter

    sigmoid = sub.add_parser(
        "sigmoid",
        help="optimal embeddings of the sigmoid (SigLIP) loss",
        description=(
            "The global optimum of the sigmoid loss for n pairs in d >= n dimensions (Lee, Chang "
            "& Sohn 2024, Theorem 2; general (t, b) by the convex reduction, an extension of the "
            "paper), and whether it is excessively separated (central paper, condition 10). t and "
            "b are the papers' temperature and bias: t = scale and b = -bias of losses.siglip, "
            "so SigLIP's init (scale 10, bias -10) is t = b = 10."
        ),
        formatter_class=formatter,
    )
    sigmoid.add_argument("--n", type=int, default=1000, help="number of pairs (batch size)")
    sigmoid.add_argument("--t", type=float, default=10.0, help="temperature t (= scale)")
    sigmoid.add_argument("--b", type=float, default=10.0, help="bias b (= -bias of siglip)")
    sigmoid.set_defaults(func=run_sigmoid)

    minibatch = sub.add_parser(
        "minibatch",
        help="variance of negative similarities under fixed mini-batches (Theorem 5.5)",
        description=(
            "Theorem 5.5 of the central paper: at the optimum of the fixed mini-batch loss, "
            "positive similarity 1, mean negative similarity -1/(n-1), and the variance of the "
            "negative similarities between the two bounds printed."
        ),
        formatter_class=formatter,
    )
    minibatch.add_argument("--n", type=int, default=50_000, help="dataset size")
    minibatch.add_argument("--m", type=int, default=256, help="mini-batch size")
    minibatch.set_defaults(func=run_minibatch)

    hardneg = sub.add_parser(
        "hardneg",
        help="SCL / UCL lower bounds (hard-negative paper, Theorems 2 and 3)",
        description=(
            "Lower bounds of the supervised (SCL) and unsupervised (UCL) contrastive losses with "
            "C classes and k negatives, attained at Neural Collapse."
        ),
        formatter_class=formatter,
    )
    hardneg.add_argument("--classes", type=int, default=3, help="number of classes C")
    hardneg.add_argument("--k", type=int, default=256, help="number of negatives")
    hardneg.add_argument("--psi", choices=("mean", "sum", "triplet"), default="mean",
                         help="form of psi_k (mean: the paper's experiments)")
    hardneg.set_defaults(func=run_hardneg)


def run_sigmoid(args: argparse.Namespace) -> int:
    from contrastkit import theory

    opt = theory.sigmoid_optimum(args.n, args.t, args.b)
    thresholds = theory.sigmoid_thresholds(args.n)
    names = {"etf": "simplex ETF (u_i = v_i)", "antipodal": "antipodal (u_i = -v_j)",
             "intermediate": "in between (CCEM with 0 < delta < inf)"}
    rows = [
        ("regime", names[opt.regime]),
        ("delta*", "inf" if math.isinf(opt.delta) else f"{opt.delta:.10g}"),
        ("positive similarity u_i.v_i", f"{opt.positive_similarity:.10g}"),
        ("negative similarity u_i.v_j", f"{opt.negative_similarity:.10g}"),
        ("  (simplex value -1/(n-1))", f"{-1 / (args.n - 1):.10g}"),
        ("within-view similarity u_i.u_j", f"{opt.within_similarity:.10g}"),
        ("normalized positive s", f"{opt.normalized_positive:.10g}"),
        ("minimal loss (1/n normalization)", f"{opt.loss:.10g}"),
        ("excessive separation (cond. 10)", "yes" if opt.excessively_separated else "no"),
        # every digit: a rounded threshold can read as equal to t on the wrong side of it
        ("t = b thresholds: antipodal <=", repr(thresholds.antipodal)),
        ("                  ETF >=", repr(thresholds.etf)),
    ]
    print(f"sigmoid loss, n = {args.n}, t = {args.t:g}, b = {args.b:g} "
          f"(losses.siglip scale = {args.t:g}, bias = {-args.b:g}); optimum for d >= n")
    _print_rows(rows)
    if args.t != args.b:
        print("note: t != b uses the convex reduction (an extension of the paper's Theorem 2).")
    return 0


def run_minibatch(args: argparse.Namespace) -> int:
    from contrastkit import theory

    bounds = theory.minibatch_variance_bounds(args.n, args.m)
    batches = args.n / args.m
    rows = [
        ("positive similarity", "1"),
        ("mean negative similarity -1/(n-1)", f"{-1 / (args.n - 1):.6g}"),
        ("variance of negatives, lower bound", f"{bounds.low:.6g}"),
        ("variance of negatives, upper bound", f"{bounds.high:.6g}"),
        ("std of negatives, range", f"{math.sqrt(bounds.low):.6g} .. {math.sqrt(bounds.high):.6g}"),
        ("d needed for the lower bound b(m-1)", f"{math.ceil(batches) * (args.m - 1)}"),
    ]
    print(f"fixed mini-batches: n = {args.n}, m = {args.m} (b = n/m = {batches:g} batches); "
          "Theorem 5.5")
    _print_rows(rows)
    if args.n % args.m:
        print("note: m does not divide n; the bounds are the theorem's formula with fractional b.")
    return 0


def run_hardneg(args: argparse.Namespace) -> int:
    from contrastkit import theory

    scl = theory.scl_lower_bound(args.classes, args.k, psi=args.psi)
    ucl = theory.ucl_lower_bound(args.classes, args.k, psi=args.psi)
    print(f"C = {args.classes} classes, k = {args.k} negatives, psi = {args.psi}")
    _print_rows([("SCL lower bound (Thm 2)", f"{scl:.7f}"),
                 ("UCL lower bound (Thm 3)", f"{ucl:.7f}")])
    return 0


def _print_rows(rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
