"""``compile=true``: the training step runs the encoder through ``torch.compile``.

Only the step's forward and backward are compiled: the encoder that is checkpointed, returned and
evaluated stays the eager module (the compiled wrapper shares its parameters), so a checkpoint
does not depend on the setting and a run may resume with it changed. The default inductor
backend generates C++ on the CPU, so a C++ compiler must be on the ``PATH`` (or named by
``CXX``); :func:`check_compilable` says so before the run starts instead of at its first step.
Measured in ``docs/benchmarks.md`` ("torch.compile").
"""

from __future__ import annotations

import os
import shutil
import sys

import torch

CPP_COMPILERS = ("g++", "clang++", "c++")  # what inductor looks for when CXX is unset


def check_compilable(device: torch.device) -> None:
    """Raise ``ValueError`` when ``compile=true`` cannot work on ``device``: on the CPU (not on
    Windows, whose compiler inductor finds itself), no C++ compiler in ``CXX`` or on the
    ``PATH``."""
    if device.type != "cpu" or sys.platform == "win32":
        return
    named = os.environ.get("CXX")
    if named and shutil.which(named):
        return
    if not named and any(shutil.which(compiler) for compiler in CPP_COMPILERS):
        return
    looked_for = f"CXX={named!r}" if named else " or ".join(CPP_COMPILERS)
    raise ValueError(f"compile=true on the CPU needs a C++ compiler for torch.compile's "
                     f"inductor backend, and none was found ({looked_for}); install one, or "
                     f"set compile=false (eager, the default)")


def compiled(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` compiled for the training step: a wrapper that shares its parameters."""
    return torch.compile(model)  # type: ignore[return-value]  # a module's: a Module
