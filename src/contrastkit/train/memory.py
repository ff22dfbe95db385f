"""The peak memory of a stretch of training (each epoch's ``peak_memory_mib``).

On CUDA it is the allocator's peak of the run's device (tensors only). On the CPU it is the
process's peak resident memory (``VmHWM``), which Linux lets a process reset
(``/proc/self/clear_refs``), so each epoch's peak is its own; it includes what the process
holds anyway (Python, torch, the dataset). Elsewhere the CPU peak is the process's since it
started (``ru_maxrss``), and where even that is unknown there is no value.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def reset_peak_memory(device: torch.device) -> None:
    """Start a new peak: what :func:`peak_memory_mib` reports is reached after this call."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return
    try:
        _CLEAR_REFS.write_text("5")  # resets VmHWM to the current resident set
    except OSError:
        pass  # not Linux (or not allowed): the peak is the process's


def peak_memory_mib(device: torch.device) -> float | None:
    """The peak memory in MiB since :func:`reset_peak_memory` (see the module docstring)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, else KiB
