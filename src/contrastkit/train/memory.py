"""The peak memory of a stretch of training (each epoch's ``peak_memory_mib``).

On CUDA it is the allocator's peak of the run's device (tensors only). On the CPU it is the
process's peak resident memory (``VmHWM``), which Linux lets a process reset
(``/proc/self/clear_refs``), so each epoch's peak is its own; it includes what the process
holds anyway (Python, torch, the dataset). Where the system does not reset it (another OS, or
a sandbox that ignores ``clear_refs``), :func:`reset_peak_memory` says so and the trainer
records no peak: the process's peak since it started would be no epoch's own.
"""

from __future__ import annotations

from pathlib import Path

import torch

_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")
_RESET_SLACK_KIB = 1024  # the resident set may grow this much between the reset and the check


def reset_peak_memory(device: torch.device) -> bool:
    """Start a new peak; returns whether :func:`peak_memory_mib` now reports the peak reached
    after this call (always on CUDA; on the CPU only where the system did reset the peak, which
    is checked: right after a reset the peak equals the resident set)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return True
    try:
        _CLEAR_REFS.write_text("5")  # resets VmHWM to the current resident set
    except OSError:
        return False  # not Linux, or not allowed
    peak, resident = _status_kib("VmHWM"), _status_kib("VmRSS")
    return peak is not None and resident is not None and peak - resident <= _RESET_SLACK_KIB


def peak_memory_mib(device: torch.device) -> float | None:
    """The peak memory in MiB: on CUDA the allocator's, on the CPU the process's peak resident
    memory (``VmHWM``), since the last :func:`reset_peak_memory` that returned ``True``; None
    where the system does not report it."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    peak = _status_kib("VmHWM")
    return None if peak is None else peak / 1024


def _status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (None where there is no such file or field)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
