"""Gradient caching against the plain step: peak memory, time, and what BatchNorm changes.

    python -m benchmarks.grad_cache                  # both encoders (about 15 min on 2 cores)
    python -m benchmarks.grad_cache --skip-resnet    # the small CNN only (about a minute)

Writes the ``grad_cache`` section of docs/benchmarks.md with ``--write-docs``.

One SimCLR (t = 0.2) optimizer step on a global batch of ``--batch`` random images, on the
CPU (the ResNet-18 at a smaller batch, --resnet-batch: its plain step at 1024 would need tens
of GiB): the plain step (both views forwarded whole, one backward) against
:func:`contrastkit.train.grad_cache.grad_cache` with chunks of ``--chunk`` rows, for the small
CNN on 28x28 grayscale images and the CIFAR ResNet-18 on 32x32 RGB images. Each measurement
runs in a fresh process: the peak memory is the growth of the process's peak resident set
during the step (``ru_maxrss``), the time the median over ``--repeats`` steps. Both encoders
have BatchNorm, which normalizes a chunk by the chunk's statistics: the last table gives the
relative difference of the gradient from the plain step's, for ``batch_norm="chunk"`` and
``batch_norm="frozen"`` (against a plain step in eval mode).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

import torch

from benchmarks._report import add_write_docs_flag, machine_description, median_seconds, publish
from contrastkit import losses
from contrastkit.models import build_encoder
from contrastkit.train.grad_cache import grad_cache

ENCODERS = {"small_cnn": (1, 28), "resnet18": (3, 32)}
LABELS = {"small_cnn": "small CNN, 28x28x1", "resnet18": "CIFAR ResNet-18, 32x32x3"}


def _setup(backbone: str, batch: int):
    channels, size = ENCODERS[backbone]
    torch.manual_seed(0)
    encoder = build_encoder(backbone, channels, (0.5,) * channels, (0.25,) * channels)
    generator = torch.Generator().manual_seed(1)
    views = torch.rand(2, batch, channels, size, size, generator=generator).unbind(0)
    return encoder, views


def _step(encoder, views, chunk: int | None, batch_norm: str = "chunk") -> None:
    """One step's gradient (zeroed first): plain when ``chunk`` is None."""
    criterion = losses.SimCLR(temperature=0.2)
    encoder.zero_grad(set_to_none=True)
    if chunk is None:
        criterion(encoder(views[0]), encoder(views[1])).backward()
    else:
        grad_cache(encoder, criterion, views[0], views[1], chunk, batch_norm=batch_norm)


def measure(backbone: str, batch: int, chunk: int | None, repeats: int) -> dict:
    """Peak-memory growth (MiB) of one step and the median seconds per step, in this process
    (run it in a fresh one: the peak resident set never goes down)."""
    encoder, views = _setup(backbone, batch)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _step(encoder, views, chunk)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = median_seconds(lambda: _step(encoder, views, chunk), repeats=repeats, warmup=0)
    return {"peak_mib": (peak - before) / 1024, "seconds": seconds}


def gradient_difference(backbone: str, batch: int, chunk: int) -> dict:
    """Relative L2 difference of the cached gradient from the plain step's, for chunk and
    frozen BatchNorm (the frozen one against a plain step in eval mode)."""
    encoder, views = _setup(backbone, batch)
    result = {}
    for mode in ("chunk", "frozen"):
        state = {k: v.clone() for k, v in encoder.state_dict().items()}
        encoder.train(mode == "chunk")
        _step(encoder, views, None)
        plain = torch.cat([p.grad.flatten() for p in encoder.parameters()])
        encoder.load_state_dict(state)
        encoder.train()
        _step(encoder, views, chunk, batch_norm=mode)
        cached = torch.cat([p.grad.flatten() for p in encoder.parameters()])
        encoder.load_state_dict(state)
        result[mode] = float((cached - plain).norm() / plain.norm())
    return result


def _in_fresh_process(task: str, **arguments) -> dict:
    command = [sys.executable, "-m", "benchmarks.grad_cache", "--task", task,
               "--arguments", json.dumps(arguments)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{task} {arguments} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(batches: dict[str, int], chunk: int, repeats: dict[str, int]) -> str:
    """The markdown section: one row per encoder, at its batch size in ``batches``."""
    sizes = ", ".join(f"{LABELS[b]} at B = {n}" for b, n in batches.items())
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.grad_cache` ({sizes}; chunks of {chunk}).", "",
             "### One SimCLR step: plain against gradient caching", "",
             "| encoder | B | plain: peak MiB | plain: s/step | cached: peak MiB | "
             "cached: s/step | memory ratio | time ratio |", "|---|---|---|---|---|---|---|---|"]
    for backbone, batch in batches.items():
        plain, cached = (_in_fresh_process("measure", backbone=backbone, batch=batch,
                                           chunk=c, repeats=repeats[backbone])
                         for c in (None, chunk))
        lines.append(f"| {LABELS[backbone]} | {batch} | {plain['peak_mib']:.0f} | "
                     f"{plain['seconds']:.3g} | {cached['peak_mib']:.0f} | "
                     f"{cached['seconds']:.3g} | "
                     f"{cached['peak_mib'] / plain['peak_mib']:.2f}x | "
                     f"{cached['seconds'] / plain['seconds']:.2f}x |")
    lines += ["", "Peak MiB: the growth of the process's peak resident memory during the "
              "step (activations, gradients, the similarity block).", "",
              f"### BatchNorm: relative gradient difference from the plain step (chunks of "
              f"{chunk})", "",
              "| encoder | B | `batch_norm=\"chunk\"` | `batch_norm=\"frozen\"` (vs plain in "
              "eval mode) |", "|---|---|---|---|"]
    for backbone, batch in batches.items():
        difference = _in_fresh_process("difference", backbone=backbone, batch=batch,
                                       chunk=chunk)
        lines.append(f"| {LABELS[backbone]} | {batch} | {difference['chunk']:.2e} | "
                     f"{difference['frozen']:.2e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="timed small-CNN steps")
    parser.add_argument("--resnet-repeats", type=int, default=1, help="timed ResNet-18 steps")
    parser.add_argument("--resnet-batch", type=int, default=256,
                        help="the ResNet-18's batch: its plain step at 1024 needs tens of GiB")
    parser.add_argument("--skip-resnet", action="store_true")
    parser.add_argument("--task", choices=("measure", "difference"), help=argparse.SUPPRESS)
    parser.add_argument("--arguments", help=argparse.SUPPRESS)
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.task:  # one measurement, in the fresh process report() started
        arguments = json.loads(args.arguments)
        task = measure if args.task == "measure" else gradient_difference
        print(json.dumps(task(**arguments)))
        return
    batches = {"small_cnn": args.batch, "resnet18": args.resnet_batch}
    if args.skip_resnet:
        batches.pop("resnet18")
    repeats = {"small_cnn": args.repeats, "resnet18": args.resnet_repeats}
    publish("grad_cache", report(batches, args.chunk, repeats), args.write_docs)


if __name__ == "__main__":
    main()
