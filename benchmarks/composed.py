"""Composed-objective benchmark: forward + backward time of a composite whose terms share their
prepared views, against the same terms computed apart and against the floor of one similarity
matrix.

Run ``python -m benchmarks.composed``; ``--quick`` for a fast check that only prints, ``--help``
for sizes and threads; ``--write-docs`` writes the ``composed`` section of ``docs/benchmarks.md``.

Objectives (``d = 128``, float32, CPU; ``B`` pairs, so SimCLR sees ``2B`` embeddings):

- ``SimCLR(0.2) + 30 * VRNS(n=50_000)`` (the paper's Table 1 objective);
- ``SimCLR(0.2) + 0.1 * Polarization()`` (LMCL's Eq. 9 with SimCLR).

Implementations, on the same seeded inputs:

- ``shared``: ``composite(u, v)``, one :class:`~contrastkit.losses.views.SharedViews` for all
  terms (the views checked, normalized and, under ``distributed=True``, gathered once per
  setting; polarization's and the spectral loss's ``B x B`` products computed once);
- ``apart``: ``sum(w * term(u, v))``, each term checking and normalizing the views itself (what
  ``CompositeLoss`` did before the views were shared);
- ``simclr alone``: the first term by itself, for the cost the second term adds;
- ``floor``: what any exact SimCLR must at least compute, as :mod:`benchmarks.losses` defines
  it: 3/4 of the symmetric ``2B x 2B`` similarity matrix, one ``exp`` over it and one backward
  product, with no reduction and no autograd (:func:`benchmarks.losses._symmetric_floor`).

Time: one subprocess per (objective, B) runs the implementations in interleaved rounds (the
order rotates each round; a call shorter than ``SAMPLE_SECONDS`` repeats to fill it, its mean
the sample), one warm-up call each, so background load hits them alike; the ratios
(to the floor, and shared / apart) are taken within each round and their medians reported.

What to expect: SimCLR's fused kernel keeps no similarity matrix another term could read (it
exponentiates the logits in place), and VRNS works with ``d x d`` Gram matrices, so sharing saves
the check of the views, their row normalization (forward and backward) and, on several
processes, the gather: a few per cent at most. Polarization computes its own ``B x B``
products next to SimCLR's kernel in both paths.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks._report import (
    SAMPLE_SECONDS,
    add_write_docs_flag,
    backward_step,
    interleaved_times,
    publish,
)

DIM = 128
TEMPERATURE = 0.2
VRNS_WEIGHT, DATASET_SIZE = 30.0, 50_000
POLARIZATION_WEIGHT = 0.1
SIZES = (64, 256, 1024)
IMPLEMENTATIONS = ("shared", "apart", "simclr alone", "floor")


def _objective(name):
    from contrastkit import losses

    second = (VRNS_WEIGHT * losses.VRNS(n=DATASET_SIZE) if name == "simclr+vrns"
              else POLARIZATION_WEIGHT * losses.Polarization())
    return losses.SimCLR(TEMPERATURE) + second


OBJECTIVES = {
    "simclr+vrns": f"SimCLR({TEMPERATURE}) + {VRNS_WEIGHT:g} * VRNS(n={DATASET_SIZE})",
    "simclr+polarization": f"SimCLR({TEMPERATURE}) + {POLARIZATION_WEIGHT:g} * Polarization()",
}


def _implementation(objective, impl):
    """A function of ``(u, v)`` returning the loss (``None`` for the floor)."""
    import torch

    composite = _objective(objective)
    if impl == "shared":
        return composite
    if impl == "apart":
        terms = composite.terms()
        return lambda u, v: sum(weight * loss(u, v) for weight, loss in terms)
    if impl == "simclr alone":
        return composite.terms()[0][1]
    from benchmarks.losses import _symmetric_floor

    def floor(u, v):
        with torch.no_grad():
            _symmetric_floor(torch.cat([u, v]), half=u.shape[0])

    return floor


def run_timing(objective: str, batch: int, repeats: int, threads: int) -> dict:
    """Interleaved timing of every implementation on one (objective, B):
    ``{impl: [seconds per round]}`` and each implementation's loss value."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    steps = {impl: backward_step(_implementation(objective, impl), batch, DIM)
             for impl in IMPLEMENTATIONS}
    values = {}
    for impl, step in steps.items():
        value = step()
        values[impl] = None if value is None else float(value.detach())
    return {"times": interleaved_times(steps, repeats, SAMPLE_SECONDS), "values": values}


def _run_child(arguments, timeout):
    command = [sys.executable, "-m", "benchmarks.composed", *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=Path(__file__).resolve().parent.parent)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout > {timeout} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": ((done.stderr.strip().splitlines() or ["failed"])[-1])[:80]}


def _summary(result) -> dict:
    """Median seconds per implementation, median per-round ratios to the floor and of shared
    to apart."""
    if "error" in result:
        return result
    times = result["times"]
    floor = times["floor"]
    summary = {"values": result["values"]}
    for impl in IMPLEMENTATIONS:
        summary[impl] = {
            "seconds": statistics.median(times[impl]),
            "ratio": statistics.median(t / f for t, f in zip(times[impl], floor, strict=True)),
        }
    summary["shared_to_apart"] = statistics.median(
        s / a for s, a in zip(times["shared"], times["apart"], strict=True))
    return summary


def _table(objective, sizes, results) -> str:
    header = "| implementation | " + " | ".join(f"B = {b}" for b in sizes) + " |"
    lines = [f"**{OBJECTIVES[objective]}**: fwd + bwd median ms (median per-round ratio to the "
             "floor)", "", header, "|---" * (len(sizes) + 1) + "|"]
    for impl in IMPLEMENTATIONS:
        cells = []
        for batch in sizes:
            result = results[objective, batch]
            cells.append(result["error"] if "error" in result else
                         f"{result[impl]['seconds'] * 1e3:,.2f} ({result[impl]['ratio']:.2f}x)")
        lines.append(f"| {impl} | " + " | ".join(cells) + " |")
    cells = [results[objective, b].get("error") or f"{results[objective, b]['shared_to_apart']:.3f}"
             for b in sizes]
    lines.append("| shared / apart, median per-round ratio | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=15, help="interleaved timing rounds")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads in each case (0: torch's default, one per core)")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per (objective, B)")
    parser.add_argument("--quick", action="store_true",
                        help="B in {64, 256}, 3 rounds; prints only")
    add_write_docs_flag(parser)
    parser.add_argument("--timing", nargs=2, metavar=("OBJECTIVE", "B"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.timing:
        objective, batch = args.timing
        print(json.dumps(run_timing(objective, int(batch), args.repeats, args.threads)))
        return
    if args.quick:
        args.sizes, args.repeats = [64, 256], 3
        args.write_docs = False

    from benchmarks._report import machine_description

    results = {}
    for objective in OBJECTIVES:
        for batch in args.sizes:
            result = _summary(_run_child(
                ["--timing", objective, str(batch), "--repeats", str(args.repeats),
                 "--threads", str(args.threads)], args.timeout))
            results[objective, batch] = result
            shown = result.get("error") or (
                ", ".join(f"{impl} {result[impl]['seconds'] * 1e3:.2f} ms "
                          f"({result[impl]['ratio']:.2f}x)" for impl in IMPLEMENTATIONS)
                + f"; shared / apart {result['shared_to_apart']:.3f}; values {result['values']}")
            print(f"{objective:20s} B={batch:5d} {shown}", flush=True)

    command = "python -m benchmarks.composed " + " ".join(
        argv if argv is not None else sys.argv[1:])
    sections = [
        f"Machine: {machine_description()}.",
        f"Command: `{command.strip()}` (d = {DIM}, float32, CPU; {args.repeats} interleaved "
        f"rounds after one warm-up call, a call repeated to fill {SAMPLE_SECONDS * 1e3:g} ms per "
        f"sample; torch threads per case: {args.threads or 'default'}).",
        "",
        "`shared` is `composite(u, v)`, whose terms share one `SharedViews` (the views checked, "
        "normalized and gathered once per setting); `apart` sums the terms computed one by one "
        "(each checking and normalizing the views itself, as composites did before); `floor` "
        "is the floor of one similarity matrix as in the losses section (3/4 of SimCLR's "
        "symmetric `2B x 2B` matrix, one `exp`, one backward product, no autograd). Ratios are "
        "taken within each interleaved round; medians are reported.",
        "",
    ]
    for objective in OBJECTIVES:
        sections += [_table(objective, args.sizes, results), ""]
    sections.append(
        "SimCLR's fused kernel keeps no similarity matrix another term could read and VRNS uses "
        "`d x d` Gram matrices, so what the composite shares here is the check of the views and "
        "their row normalization (forward and backward); polarization computes its own `B x B` "
        "products in both paths."
    )
    publish("composed", "\n".join(sections), args.write_docs)


if __name__ == "__main__":
    main()
