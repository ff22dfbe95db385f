"""Pretraining: config, loop, optimizer and schedule, checkpoints."""

from .checkpoint import load_checkpoint, save_checkpoint
from .config import PretrainConfig, load_config, parse_overrides
from .loop import PretrainResult, pretrain
from .objective import build_loss
from .optim import LARS, WarmupCosine, build_optimizer, build_scheduler

__all__ = [
    "LARS",
    "PretrainConfig",
    "PretrainResult",
    "WarmupCosine",
    "build_loss",
    "build_optimizer",
    "build_scheduler",
    "load_checkpoint",
    "load_config",
    "parse_overrides",
    "pretrain",
    "save_checkpoint",
]
