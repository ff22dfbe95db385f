"""Hard-negative sampling benchmark: the per-anchor inverse-CDF sampler against torch.multinomial.

The resampling estimator of the hard-negative losses (Jiang et al., arXiv:2311.05139) draws
``k`` negatives for every positive pair from its anchor's law ``q_i``. Before
:func:`contrastkit.losses.hard_negative.sampling.sample_from_rows`, the loss formed the
``(pairs, B)`` matrix of every pair's probabilities and called ``torch.multinomial`` on it;
that baseline is kept here (:func:`multinomial_baseline`, a copy of the old code) and timed
side by side with the new sampler, in interleaved rounds in one process:

- the sampling alone, on HSCL's law (``beta = 5``, other-class candidates) for one direction;
- HSCL's whole loss, forward + backward (two views, so two directions), with each sampler
  swapped into the loss.

At B = 128, 256, 512 with k = 256, d = 128, labels in 10 classes (row ``i`` in class
``i mod 10``; positives = same-label rows, ~B^2 / 10 pairs). Ratios are old / new (above 1:
the new sampler is faster), the median of the per-round ratios.

Run ``python -m benchmarks.hardneg_sampling`` (``--write-docs`` writes the
``hardneg_sampling`` section of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import statistics

import torch

from benchmarks._report import (
    SAMPLE_SECONDS,
    add_write_docs_flag,
    backward_step,
    interleaved_times,
    machine_description,
    publish,
)
from contrastkit import losses
from contrastkit.losses.hard_negative import loss as hard_negative

DIM = 128
K = 256
CLASSES = 10
BETA = 5.0
SIZES = (128, 256, 512)


def multinomial_baseline(log_weights, row_index, k, generator):
    """BASELINE, the sampler before this change (a copy of the old code of
    ``_directional_loss``): one row of probabilities per pair, a ``(pairs, B)`` matrix, and
    ``torch.multinomial`` on it."""
    probabilities = log_weights.detach().exp()[row_index]
    return torch.multinomial(probabilities, k, replacement=True, generator=generator)


SAMPLERS = {"multinomial (old)": multinomial_baseline,
            "inverse CDF (new)": hard_negative.sample_from_rows}


def hscl_law(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """HSCL's ``log q_i`` and the pairs' anchors, on seeded unit embeddings (as in the loss)."""
    generator = torch.Generator().manual_seed(batch)
    z = torch.nn.functional.normalize(torch.randn(batch, DIM, generator=generator), dim=1)
    labels = torch.arange(batch) % CLASSES
    same_class = labels.unsqueeze(1) == labels.unsqueeze(0)
    log_weights = torch.log_softmax((BETA * (z @ z.T)).masked_fill(same_class, -torch.inf), 1)
    anchor_index, _ = same_class.nonzero(as_tuple=True)
    return log_weights, anchor_index


def sampling_step(sampler, batch: int):
    log_weights, anchor_index = hscl_law(batch)
    generator = torch.Generator().manual_seed(0)
    return lambda: sampler(log_weights, anchor_index, K, generator)


def loss_with(sampler):
    """HSCL (two views, ``beta = 5``, ``k = 256``) with ``sampler`` swapped into the loss."""
    generator = torch.Generator().manual_seed(0)

    def call(u, v):
        saved = hard_negative.sample_from_rows
        hard_negative.sample_from_rows = sampler
        try:
            labels = torch.arange(len(u)) % CLASSES
            return losses.hscl(u, v, labels, beta=BETA, k=K, generator=generator)
        finally:
            hard_negative.sample_from_rows = saved

    return call


def uniforms_floor(pairs: int, repeats: int) -> float:
    """Median seconds of drawing one uniform per draw (``torch.rand(pairs, k)``): what any
    exact inverse-CDF sampler pays before it looks anything up."""
    generator = torch.Generator().manual_seed(0)
    times = interleaved_times({"rand": lambda: torch.rand(pairs, K, generator=generator)},
                              repeats, SAMPLE_SECONDS)
    return statistics.median(times["rand"])


def compare(steps: dict, repeats: int) -> dict[str, float]:
    """Median seconds of the old and new steps and the median per-round ratio old / new."""
    for step in steps.values():
        step()
    times = interleaved_times(steps, repeats, SAMPLE_SECONDS)
    old, new = (times[name] for name in SAMPLERS)
    return {"old": statistics.median(old), "new": statistics.median(new),
            "ratio": statistics.median(o / n for o, n in zip(old, new, strict=True))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="interleaved timing rounds")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.hardneg_sampling` (HSCL, beta = {BETA:g}, "
             f"k = {K}, d = {DIM}, {CLASSES} classes, float32, CPU, torch's default threads; "
             f"{args.repeats} interleaved rounds, each sample at least "
             f"{SAMPLE_SECONDS * 1e3:g} ms). Old: `torch.multinomial` on the (pairs x B) "
             "matrix of probabilities; new: `sample_from_rows`, one inverse-CDF table per "
             "anchor. Sampling: one direction's draws; loss: HSCL forward + backward on two "
             "views (two directions). Ratio: old / new, median of the per-round ratios.", "",
             "| B | pairs | sampling old (ms) | sampling new (ms) | sampling ratio "
             "| one uniform per draw (ms) | new / uniforms | loss old (ms) | loss new (ms) "
             "| loss ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for batch in args.sizes:
        pairs = hscl_law(batch)[1].numel()
        sampling = compare({name: sampling_step(sampler, batch)
                            for name, sampler in SAMPLERS.items()}, args.repeats)
        loss = compare({name: backward_step(loss_with(sampler), batch, DIM)
                        for name, sampler in SAMPLERS.items()}, args.repeats)
        floor = uniforms_floor(pairs, args.repeats)
        print(f"B={batch:4d} pairs {pairs}: sampling {sampling['old'] * 1e3:.1f} -> "
              f"{sampling['new'] * 1e3:.1f} ms ({sampling['ratio']:.1f}x), loss "
              f"{loss['old'] * 1e3:.1f} -> {loss['new'] * 1e3:.1f} ms "
              f"({loss['ratio']:.2f}x)", flush=True)
        lines.append(f"| {batch} | {pairs} | {sampling['old'] * 1e3:.1f} | "
                     f"{sampling['new'] * 1e3:.1f} | {sampling['ratio']:.1f}x | "
                     f"{floor * 1e3:.1f} | {sampling['new'] / floor:.1f}x | "
                     f"{loss['old'] * 1e3:.1f} | {loss['new'] * 1e3:.1f} | "
                     f"{loss['ratio']:.2f}x |")
    publish("hardneg_sampling", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
