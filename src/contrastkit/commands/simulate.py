"""``contrastkit simulate``: optimize free embeddings and compare with the theory.

``contrastkit simulate --loss simclr --n 4 --m 2 --d 3 --plot`` draws the central paper's Fig. 2
(full-batch optimum and the two extreme fixed mini-batch optima on the sphere);
``contrastkit simulate sigmoid-phase --plot`` draws the sigmoid paper's Fig. 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._paths import check_writable_folder

#: The files each experiment writes into --out. A new call first removes these (and only
#: these), so no figure of an earlier call is left beside the new results.
SIMULATE_OUTPUTS = ("metrics.json", "history.png", "sphere.png")
PHASE_OUTPUTS = ("phase.json", "phase.png")


def register(subparsers) -> None:
    formatter = argparse.ArgumentDefaultsHelpFormatter
    parser = subparsers.add_parser(
        "simulate",
        help="optimize free embeddings on the sphere and compare with the theory",
        description=(
            "Optimize n pairs of free unit embeddings in R^d on a loss, with full batches and, "
            "given --m, fixed mini-batches of size m; print the similarity statistics next to "
            "Theorem 5.1 / 5.5 and write metrics (and with --plot, figures) to --out. With d = 3 "
            "the plot is the central paper's Fig. 2. EXPERIMENT is optional: without it, this "
            "simulation runs; `contrastkit simulate sigmoid-phase --help` describes the other."
        ),
        formatter_class=formatter,
    )
    parser.add_argument("--loss", default="simclr",
                        help="any registered loss that needs no labels (contrastkit demo lists "
                             "them): simclr, info_nce, dcl, dhel, siglip, spectral, hcl, ucl, "
                             "hucl, or one of your own")
    parser.add_argument("--temperature", type=float, default=0.5,
                        help="temperature of simclr/info_nce/dcl/dhel; 0.5, not pretrain's "
                             "0.2: below ~0.3 the loss is so flat near its optimum that "
                             "convergence needs many more steps (docs/theory.md)")
    parser.add_argument("--scale", type=float, default=10.0, help="siglip scale (papers' t)")
    parser.add_argument("--bias", type=float, default=-10.0, help="siglip bias (papers' -b)")
    parser.add_argument("--vrns", type=float, default=0.0, metavar="LAMBDA",
                        help="add LAMBDA * VRNS(n) (Def. 5.7) to the loss")
    parser.add_argument("--n", type=int, default=4, help="number of pairs")
    parser.add_argument("--m", type=int, default=None, help="fixed mini-batch size (divides n)")
    parser.add_argument("--d", type=int, default=3, help="embedding dimension")
    _add_optimization_args(parser, steps=500)
    parser.add_argument("--plot", action="store_true", help="write PNG figures")
    parser.add_argument("--out", type=Path, default=Path("runs/simulate"), help="output folder")
    parser.set_defaults(func=run_simulate)

    sub = parser.add_subparsers(dest="simulate_command", metavar="[EXPERIMENT]",
                                title="optional experiment (instead of the simulation above)")
    phase = sub.add_parser(
        "sigmoid-phase",
        help="the sigmoid paper's Fig. 2: positive similarity over (N, t = b)",
        description=(
            "For each N and t = b on a grid, optimize the sigmoid loss on free embeddings "
            "(d = N, or ceil(N/2) with --half-dim) and record s = (1 + mean u_i.v_i)/2, next to "
            "the theoretical optimum and Theorem 2's threshold curves."
        ),
        formatter_class=formatter,
    )
    phase.add_argument("--n-min", type=int, default=5, help="smallest N")
    phase.add_argument("--n-max", type=int, default=16, help="largest N")
    phase.add_argument("--t-min", type=float, default=0.1, help="smallest t = b")
    phase.add_argument("--t-max", type=float, default=3.0, help="largest t = b")
    phase.add_argument("--t-count", type=int, default=15, help="number of t values")
    phase.add_argument("--half-dim", action="store_true", help="use d = ceil(N/2) instead of N")
    _add_optimization_args(phase, steps=400)
    phase.add_argument("--plot", action="store_true", help="write the PNG figure")
    phase.add_argument("--out", type=Path, default=Path("runs/sigmoid-phase"),
                       help="output folder")
    phase.set_defaults(func=run_sigmoid_phase)


def _add_optimization_args(parser, steps: int) -> None:
    parser.add_argument("--steps", type=int, default=steps, help="optimization steps")
    parser.add_argument("--lr", type=float, default=0.1, help="peak learning rate")
    parser.add_argument("--optimizer", choices=("adam", "sgd"), default="adam", help="optimizer")
    parser.add_argument("--seed", type=int, default=0, help="random seed")


def run_simulate(args: argparse.Namespace) -> int:
    from contrastkit import theory
    from contrastkit.checks.scalars import check_count
    from contrastkit.simulate import loss_by_name, minibatch_runs
    from contrastkit.simulate.embeddings import check_batch_size, check_dimension

    check_count("--n", args.n, minimum=2)
    check_dimension(args.d, "--d")
    if args.m is not None:
        check_batch_size(args.m, args.n, fixed=True, name="--m")
    check_writable_folder(args.out, "--out")
    loss = loss_by_name(args.loss, {"temperature": args.temperature, "scale": args.scale,
                                    "bias": args.bias}, vrns=args.vrns, n=args.n)
    runs = minibatch_runs(loss, args.n, args.d, args.m, steps=args.steps, lr=args.lr,
                          optimizer=args.optimizer, seed=args.seed)
    _prepare_out(args.out, SIMULATE_OUTPUTS)
    print(f"loss: {loss!r}".replace("\n", " "))
    print(f"n = {args.n} pairs in d = {args.d}, {args.steps} {args.optimizer} steps")
    print(f"{'run':<30} {'loss':>12} {'pos mean':>10} {'neg mean':>10} {'neg var':>10}")
    summary = {}
    for name, result in runs.items():
        stats = result.stats
        print(f"{name:<30} {result.history[-1]['loss']:>12.6f} {stats.positive_mean:>10.6f} "
              f"{stats.negative_mean:>10.6f} {stats.negative_var:>10.3g}")
        summary[name] = {"final": result.history[-1], "history": result.history}
    print(_full_batch_theory(args))
    if args.m is not None:
        bounds = theory.minibatch_variance_bounds(args.n, args.m)
        print(f"theory (Thm 5.5, m = {args.m}): pos 1, neg mean {-1 / (args.n - 1):.6f}, "
              f"var in [{bounds.low:.6g}, {bounds.high:.6g}]")
    (args.out / "metrics.json").write_text(json.dumps(summary, indent=1))
    if args.plot:
        _plot_simulation(args, runs)
    print(f"wrote {args.out}/")
    return 0


def _prepare_out(folder: Path, outputs: tuple[str, ...]) -> None:
    """Create ``folder`` and remove the ``outputs`` an earlier call left there."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in outputs:
        (folder / name).unlink(missing_ok=True)


def _full_batch_theory(args: argparse.Namespace) -> str:
    """What the theory predicts for the full-batch run, as one line."""
    from contrastkit import theory

    simplex = f"pos 1, neg -1/(n-1) = {-1 / (args.n - 1):.6f}, var 0"
    if args.vrns > 0:
        return f"theory (Thm 5.1, base loss without VRNS): {simplex}"
    if args.loss == "spectral":
        return (f"theory: Thm 5.1 claims {simplex}, but the spectral loss violates its premise; "
                "with d >= n the optimum is pos 1, neg 0 (see docs/theory.md)")
    if args.loss == "siglip":
        t, b = args.scale, -args.bias
        if args.d < args.n:
            return f"theory (sigmoid optimum) assumes d >= n = {args.n}; got d = {args.d}"
        opt = theory.sigmoid_optimum(args.n, t, b)
        return (f"theory (sigmoid optimum, t = {t:g}, b = {b:g}): {opt.regime}, pos "
                f"{opt.positive_similarity:.6f}, neg {opt.negative_similarity:.6f}, var 0"
                + (" (excessive separation, condition 10)" if opt.excessively_separated else ""))
    if args.d < args.n - 1:
        return (f"theory (Thm 5.1, full batch) assumes d >= n - 1 = {args.n - 1}, where the "
                f"simplex fits; got d = {args.d}")
    return f"theory (Thm 5.1, full batch): {simplex}"


def _plot_simulation(args, runs) -> None:
    from contrastkit import theory
    from contrastkit.simulate import figures

    figures.plot_history({name: result.history for name, result in runs.items()},
                         args.out / "history.png")
    if args.d != 3:
        print("note: the sphere figure needs --d 3; wrote history.png only")
        return
    panels = []
    if args.m is not None and args.n % args.m == 0:
        bounds = theory.minibatch_variance_bounds(args.n, args.m)
        if args.m - 1 <= 3:
            u, v = theory.minibatch_optimum(args.n, args.m, 3, extreme="max")
            panels.append((f"(a) mini-batch optimum (theory)\nmax neg. variance {bounds.high:.3f}",
                           u, v))
        if (args.n // args.m) * (args.m - 1) <= 3:
            u, v = theory.minibatch_optimum(args.n, args.m, 3, extreme="min")
            panels.append((f"(b) mini-batch optimum (theory)\nmin neg. variance {bounds.low:.3f}",
                           u, v))
    for name, result in runs.items():
        stats = result.stats
        panels.append((f"simulated: {name}\nneg. variance {stats.negative_var:.3f}",
                       result.u.numpy(), result.v.numpy()))
    path = figures.plot_sphere_panels(panels, args.out / "sphere.png")
    print(f"figure: {path}")


def run_sigmoid_phase(args: argparse.Namespace) -> int:
    import numpy as np
    from rich.progress import track

    from contrastkit.simulate import sigmoid_phase

    check_writable_folder(args.out, "--out")
    if args.n_min < 3 or args.n_max < args.n_min:
        raise ValueError(f"--n-min must be >= 3 and <= --n-max, got {args.n_min}, {args.n_max}")
    if not 0 < args.t_min < args.t_max or args.t_count < 2:
        raise ValueError("--t-min, --t-max must satisfy 0 < t-min < t-max, and --t-count >= 2")
    phase = sigmoid_phase(
        range(args.n_min, args.n_max + 1), np.linspace(args.t_min, args.t_max, args.t_count),
        half_dim=args.half_dim, steps=args.steps, lr=args.lr, optimizer=args.optimizer,
        seed=args.seed, cells=lambda grid: track(grid, description="optimizing"))
    _prepare_out(args.out, PHASE_OUTPUTS)
    (args.out / "phase.json").write_text(json.dumps(phase.as_dict(), indent=1))
    print(f"{phase.simulated.size} cells; max |s_simulated - s_theory| = "
          f"{phase.largest_gap:.2e}"
          + (" (d = ceil(N/2): the theory assumes d >= N)" if args.half_dim else ""))
    if args.plot:
        from contrastkit.simulate import figures

        dim = "d = ceil(N/2)" if args.half_dim else "d = N"
        panels = [(f"simulated ({dim}, {args.steps} steps)", phase.simulated),
                  ("theory (d >= N): sigmoid_optimum", phase.predicted)]
        path = figures.plot_sigmoid_phase(phase.ns, phase.ts, panels, args.out / "phase.png")
        print(f"figure: {path}")
    print(f"wrote {args.out}/")
    return 0
