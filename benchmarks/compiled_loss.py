"""Compiled losses: what ``torch.compile`` makes of a loss at the batch sizes users train with.

At small B a loss's time is mostly the dispatch of a hundred-odd small operators (the
``loss_profile`` section of docs/benchmarks.md); a compiled graph fuses them. This times, for
InfoNCE, SimCLR and SigLIP at B in {64, 256, 1024}, forward + backward of:

- ``floor``: the least any exact implementation computes (as in ``benchmarks.losses``);
- ``contrastkit``: the library's loss, eager (its default);
- ``contrastkit compiled``: the same module under ``torch.compile`` (inductor, default mode);
- ``formula``: the loss written as the few autograd operators of its formula (row
  normalization, the logit matrix, one ``cross_entropy`` or ``softplus``), eager;
- ``formula compiled``: that formula under ``torch.compile``, the best a compiled graph of
  stock operators reaches.

The implementations run in interleaved rounds (each sample at least ``SAMPLE_SECONDS``); the
median per-round ratio to the floor is reported. Compilation happens before the timing and is
not counted (its seconds are reported, with inductor's graph cache off; the C++ kernels it
built earlier in the same run are reused). The formulas' values are checked against
contrastkit's before any timing.

Run ``python -m benchmarks.compiled_loss`` (``--write-docs`` writes the ``compiled_loss``
section of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from benchmarks._report import (
    SAMPLE_SECONDS,
    add_write_docs_flag,
    backward_step,
    interleaved_times,
    machine_description,
    publish,
)
from benchmarks.losses import IMPLEMENTATIONS, SIGLIP_BIAS, SIGLIP_SCALE, TEMPERATURE

DIM = 128
SIZES = (64, 256, 1024)
IMPLEMENTATION_NAMES = ("floor", "contrastkit", "contrastkit compiled", "formula",
                        "formula compiled")


def _info_nce_formula(u, v):
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    logits = u @ v.T / TEMPERATURE
    targets = torch.arange(len(u))
    return 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets))


def _simclr_formula(u, v):
    z = F.normalize(torch.cat([u, v]), dim=1)
    own = torch.eye(len(z), dtype=torch.bool)
    logits = (z @ z.T / TEMPERATURE).masked_fill(own, -torch.inf)
    return F.cross_entropy(logits, torch.arange(len(z)).roll(len(u)))


def _siglip_formula(u, v):
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    logits = SIGLIP_SCALE * u @ v.T + SIGLIP_BIAS
    # -log sigmoid(+z) = softplus(z) - z on the diagonal, -log sigmoid(-z) = softplus(z) off it
    return (F.softplus(logits).sum() - logits.diagonal().sum()) / len(u)


FORMULAS = {"info_nce": _info_nce_formula, "simclr": _simclr_formula,
            "siglip": _siglip_formula}


def _check_formula(loss: str, batch: int) -> None:
    """The formula's value is contrastkit's, to float32 rounding."""
    generator = torch.Generator().manual_seed(batch)
    u, v = (torch.randn(batch, DIM, generator=generator, dtype=torch.float64) for _ in range(2))
    expected, formula = IMPLEMENTATIONS["contrastkit"](loss, None)(u, v), FORMULAS[loss](u, v)
    if not torch.allclose(formula, expected, rtol=1e-10, atol=1e-12):
        raise AssertionError(f"{loss}: the formula gives {float(formula)}, contrastkit "
                             f"{float(expected)}")


def measure(loss: str, batch: int, repeats: int) -> dict[str, dict[str, float]]:
    """Median ms and median per-round ratio to the floor of each implementation, and the
    seconds the two compiled ones took to compile (their first forward + backward)."""
    _check_formula(loss, batch)
    torch._dynamo.reset()  # each (loss, B) compiles afresh, as a new run would
    contrastkit = IMPLEMENTATIONS["contrastkit"](loss, None)
    functions = {"floor": IMPLEMENTATIONS["floor"](loss, None),
                 "contrastkit": contrastkit,
                 "contrastkit compiled": torch.compile(contrastkit),
                 "formula": FORMULAS[loss],
                 "formula compiled": torch.compile(FORMULAS[loss])}
    steps = {name: backward_step(function, batch, DIM) for name, function in functions.items()}
    compile_seconds = {}
    for name, step in steps.items():
        start = time.perf_counter()
        step()
        if name.endswith("compiled"):
            compile_seconds[name] = time.perf_counter() - start
        step()
    times = interleaved_times(steps, repeats, SAMPLE_SECONDS)
    floor = times["floor"]
    return {name: {"ms": statistics.median(seconds) * 1e3,
                   "ratio": statistics.median(t / f for t, f in zip(seconds, floor, strict=True)),
                   "compile_s": compile_seconds.get(name)}
            for name, seconds in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved timing rounds")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--losses", nargs="+", choices=list(FORMULAS), default=list(FORMULAS))
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    torch._inductor.config.fx_graph_cache = False  # no graph compiled by an earlier run
    header = " | ".join(f"B = {batch}" for batch in args.sizes)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.compiled_loss` (d = {DIM}, float32, CPU, torch's "
             f"default threads; temperature {TEMPERATURE}, SigLIP scale {SIGLIP_SCALE:g}, bias "
             f"{SIGLIP_BIAS:g}; inductor, default mode; {args.repeats} interleaved rounds, each "
             f"sample at least {SAMPLE_SECONDS * 1e3:g} ms). Each cell: forward + backward, median "
             "ms (median per-round ratio to the floor); compilation, the first call, is not "
             "timed (its seconds in the last rows: inductor's graph cache off, the kernels it "
             "built earlier in this run reused)."]
    for loss in args.losses:
        results = {batch: measure(loss, batch, args.repeats) for batch in args.sizes}
        lines += ["", f"**{loss}**", "", f"| implementation | {header} |",
                  "|---|" + "---|" * len(args.sizes)]
        for name in IMPLEMENTATION_NAMES:
            cells = [f"{results[b][name]['ms']:.2f} ({results[b][name]['ratio']:.2f}x)"
                     for b in args.sizes]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        for name in IMPLEMENTATION_NAMES:
            if name.endswith("compiled"):
                cells = [f"{results[b][name]['compile_s']:.1f}" for b in args.sizes]
                lines.append(f"| {name}: compilation, s | " + " | ".join(cells) + " |")
        print("\n".join(lines[-len(IMPLEMENTATION_NAMES) - 4:]), flush=True)
    publish("compiled_loss", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
