"""Where a run executes: device, process rank and world size (torchrun sets the environment)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def start_runtime(device: str = "auto") -> Runtime:
    """Pick the device and, under torchrun (``WORLD_SIZE > 1``), join the process group
    (NCCL on GPUs, gloo on CPUs). ``device`` is ``"auto"`` (CUDA when available), ``"cpu"``,
    ``"cuda"`` or ``"cuda:<i>"``."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    chosen = torch.device(device)
    if chosen.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device is 'cuda' but no CUDA device is available")
        if chosen.index is None:
            chosen = torch.device("cuda", local_rank if world_size > 1 else 0)
        torch.cuda.set_device(chosen)
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    rank = dist.get_rank() if world_size > 1 else 0
    return Runtime(chosen, rank, world_size)
