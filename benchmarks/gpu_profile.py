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
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    return profiled.key_averages().table(sort_by=key, row_limit=rows,
                                         max_name_column_width=70)


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
    sections = []
    for name in LOSSES:
        for triton in (True, False):
            state = "on" if triton else "off"
            title = f"==== {name}, bfloat16, B = {args.batch}, Triton passes {state}"
            sections.append(f"{title}\n{profile_loss(name, u, v, triton, args.rows)}")
            print(title, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_profile.txt").write_text("\n".join(sections))
    command = "python -m benchmarks.gpu_profile " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])
    publish("gpu_profile", f"Machine: {machine_description()}.\n\nCommand: `{command.strip()}`."
            "\n\n```\n" + "\n".join(sections) + "\n```", args.write_docs)


if __name__ == "__main__":
    main()
