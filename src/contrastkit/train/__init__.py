"""Pretraining: config, loop, optimizer and schedule, checkpoints.

Names are imported on first use, so reading a config (e.g. for ``contrastkit pretrain --help``)
does not load torch.
"""

from __future__ import annotations

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
