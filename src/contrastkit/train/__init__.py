"""Pretraining: config, loop, optimizer and schedule, checkpoints.

Names are imported on first use, so reading a config (e.g. for ``contrastkit pretrain --help``)
does not load torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit.files import RunFolderError as RunFolderError  # raised when a run folder fails
from contrastkit.lazy_exports import lazy_exports

_EXPORTS = {
    "LARS": "optim",
    "PretrainConfig": "config",
    "PretrainResult": "loop",
    "WarmupCosine": "optim",
    "build_loss": "objective",
    "build_optimizer": "optim",
    "build_scheduler": "optim",
    "load_checkpoint": "checkpoint",
    "load_config": "config_files",
    "parse_overrides": "config_files",
    "pretrain": "loop",
    "save_checkpoint": "checkpoint",
    "stage_progress": "progress",
    "start_runtime": "runtime",
    "TrainingDiverged": "stopping",
    "TrainingStopped": "stopping",
}

__all__ = sorted([*_EXPORTS, "RunFolderError"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

# The names as a type checker sees them (tests/test_typing.py holds them to _EXPORTS).
if TYPE_CHECKING:
    from .checkpoint import load_checkpoint as load_checkpoint
    from .checkpoint import save_checkpoint as save_checkpoint
    from .config import PretrainConfig as PretrainConfig
    from .config_files import load_config as load_config
    from .config_files import parse_overrides as parse_overrides
    from .loop import PretrainResult as PretrainResult
    from .loop import pretrain as pretrain
    from .objective import build_loss as build_loss
    from .optim import LARS as LARS
    from .optim import WarmupCosine as WarmupCosine
    from .optim import build_optimizer as build_optimizer
    from .optim import build_scheduler as build_scheduler
    from .progress import stage_progress as stage_progress
    from .runtime import start_runtime as start_runtime
    from .stopping import TrainingDiverged as TrainingDiverged
    from .stopping import TrainingStopped as TrainingStopped
