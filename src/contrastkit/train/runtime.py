"""Where a run executes: device, process rank and world size (torchrun sets the environment)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

import torch
import torch.distributed as dist

from contrastkit.files import RunFolderError
from contrastkit.models import convert_to_global_batch_norm

from .config import check_device_name

T = TypeVar("T")


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
    ``"cuda"``, ``"cuda:<i>"`` or ``"mps"``; one this machine lacks is a ``ValueError``."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    check_device_name(device, "device")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    chosen = torch.device(device)
    _check_available(chosen)
    if chosen.type == "cuda":
        if chosen.index is None:
            chosen = torch.device("cuda", local_rank if world_size > 1 else 0)
        torch.cuda.set_device(chosen)
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    rank = dist.get_rank() if world_size > 1 else 0
    return Runtime(chosen, rank, world_size)


def _check_available(device: torch.device) -> None:
    """A ``ValueError`` naming the device when this machine does not have it."""
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"device is {str(device)!r} but no CUDA device is available; "
                             f"use device=cpu (or auto)")
        if device.index is not None and device.index >= count:
            raise ValueError(f"device is {str(device)!r} but this machine has {count} CUDA "
                             f"device(s), cuda:0 to cuda:{count - 1}")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device is 'mps' but MPS is not available; use device=cpu (or auto)")


def together(runtime: Runtime, action: Callable[[], T]) -> T:
    """``action()`` in every process, failing in all of them if it fails in one.

    For what the main process alone does between collectives (lock and write the run folder,
    write a checkpoint): without it a failure there (a full disk) stopped the main process
    while the others went on into the next collective, to hang or die of a lost connection
    with a traceback. Each process raises its own error; a process that did not fail raises a
    copy of the first failing one's (a ``RunFolderError`` or ``ValueError`` as it was,
    anything else as a ``RuntimeError``), ending ``(in process <rank>)``. One
    ``all_gather_object`` under torch.distributed, nothing otherwise."""
    if runtime.world_size == 1:
        return action()
    result, error, failure = None, None, None
    try:
        result = action()
    except Exception as caught:  # every kind: the others must hear of it to stop too
        error = caught
        kind = next(kind for kind in (RunFolderError, ValueError, RuntimeError, Exception)
                    if isinstance(caught, kind))
        failure = (kind.__name__, str(caught))
    failures: list = [None] * runtime.world_size
    dist.all_gather_object(failures, failure)
    if error is not None:
        raise error
    for rank, found in enumerate(failures):
        if found is not None:
            kind = {"RunFolderError": RunFolderError, "ValueError": ValueError}.get(
                found[0], RuntimeError)
            raise kind(f"{found[1]} (in process {rank})")
    return cast(T, result)  # action() returned it: no process failed


def parallel_model(encoder: torch.nn.Module, runtime: Runtime, find_unused: bool = False
              ) -> torch.nn.Module:
    """The encoder, under torch.distributed wrapped in DDP with global BatchNorm;
    ``find_unused`` lets a backward pass leave some parameters without a gradient."""
    if runtime.world_size == 1:
        return encoder
    convert_to_global_batch_norm(encoder, runtime.device)
    device_ids = [runtime.device.index] if runtime.device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(encoder, device_ids=device_ids,
                                                     find_unused_parameters=find_unused)
