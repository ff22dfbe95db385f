"""Where a loss's time goes on a GPU: the kernels of one forward + backward call, by device time.

Run ``python -m benchmarks.gpu_profile --out FOLDER`` on a CUDA machine (the GPU check does):
for InfoNCE, SigLIP and SimCLR at B = 16 384, d = 512 in bfloat16, with the Triton passes of
the unchunked kernels on and off (``kernels.triton_passes.ENABLED``), it runs three untimed
calls, then profiles two (``torch.profiler``) and writes the table of the kernels with the most
device time to ``FOLDER/gpu_profile.txt`` (and prints them; ``--write-docs`` also writes the
``gpu_profile`` section of docs/benchmarks.md). ``--device cpu --batch 64`` runs the same code
on the CPU (CPU time), which is how the tests check it. It measures where the time goes, not
how fast: the loss benchmark (``benchmarks.gpu_losses``) times the calls.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit import losses
from contrastkit.losses.kernels import triton_passes

LOSSES = {
    "info_nce": lambda u, v: losses.info_nce(u, v, 0.1),
    "siglip": lambda u, v: losses.siglip(u, v, 10.0, -10.0),
    "simclr": lambda u, v: losses.simclr(u, v, 0.1),
}


def profile_loss(name: str, u: torch.Tensor, v: torch.Tensor, triton: bool, rows: int) -> str:
    """The profiler's table for two calls of loss ``name`` (forward + backward)."""
    call = LOSSES[name]
    device = u.device
    triton_passes.ENABLED = triton
    try:
        for _ in range(3):  # compilation, allocations
            call(u, v).backward()
        activities = [ProfilerActivity.CUDA if device.type == "cuda" else ProfilerActivity.CPU]
        with profile(activities=activities) as profiled:
            for _ in range(2):
                call(u, v).backward()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
    finally:
        triton_passes.ENABLED = True
    return kernel_table(profiled.key_averages(), device.type == "cuda", rows)


def kernel_table(events, on_device: bool, rows: int) -> str:
    """The ``rows`` kernels (operators on the CPU) with the most self time, as a Markdown table:
    each one's total over the profiled calls, its share of all of them, its number of calls
    and its time per call. Only the column that was measured: torch's own table also prints
    the CPU columns of a device-only profile, all zero."""
    def self_us(event) -> float:
        return event.self_device_time_total if on_device else event.self_cpu_time_total

    timed = sorted((e for e in events if self_us(e) > 0), key=self_us, reverse=True)
    total = sum(self_us(e) for e in timed)
    clock = "device" if on_device else "CPU"
    lines = [f"| kernel | self {clock} time (ms) | share | calls | per call (ms) |",
             "|---|---|---|---|---|"]
    for event in timed[:rows]:
        name = event.key if len(event.key) <= 70 else event.key[:67] + "..."
        name = name.replace("|", "\\|")
        lines.append(f"| `{name}` | {self_us(event) / 1e3:.3f} | {self_us(event) / total:.1%} "
                     f"| {event.count} | {self_us(event) / event.count / 1e3:.3f} |")
    lines.append(f"| all | {total / 1e3:.3f} | 100% | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-profile"))
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=16384)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--rows", type=int, default=12, help="kernels listed per table")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "benchmarks.gpu_profile: no CUDA device; pass --device cpu\n")
    generator = torch.Generator(device=args.device).manual_seed(0)
    u, v = (torch.randn(args.batch, args.dim, device=args.device, generator=generator)
            .bfloat16().requires_grad_() for _ in range(2))
    tables = []
    for name in LOSSES:
        for triton in (True, False):
            title = f"{name}, bfloat16, B = {args.batch}, Triton passes {'on' if triton else 'off'}"
            tables.append((title, profile_loss(name, u, v, triton, args.rows)))
            print(f"==== {title}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_profile.txt").write_text(
        "\n".join(f"==== {title}\n\n{table}\n" for title, table in tables))
    command = "python -m benchmarks.gpu_profile " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])
    publish("gpu_profile", f"Machine: {machine_description()}.\n\nCommand: `{command.strip()}`."
            + "".join(f"\n\n**{title}**\n\n{table}" for title, table in tables),
            args.write_docs)

if __name__ == "__main__":
    main()
