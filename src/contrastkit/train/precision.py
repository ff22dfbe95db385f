"""The ``precision`` setting: the float format a training step computes in.

- ``bf16``: the forward pass and the loss under ``torch.autocast`` with bfloat16 (matrix
  products and convolutions on the GPU's tensor cores); no loss scaling, since bfloat16 has
  float32's exponent range. The default on a CUDA GPU that supports it (Ampere and newer),
  as open_clip trains.
- ``fp16``: autocast with float16, and a ``GradScaler`` that scales the loss so that small
  gradients do not underflow and skips a step whose gradients overflow.
- ``fp32``: no autocast (TF32 stays as PyTorch's defaults leave it). The default on the CPU and
  on MPS, where autocast does not pay.
- ``auto`` (the config's default): ``bf16`` on a CUDA device with bfloat16 support, ``fp16`` on
  an older CUDA device, ``fp32`` elsewhere.

The model's weights, the optimizer's state and the loss's reductions stay in float32 whatever
the setting (the losses keep log-sum-exp, softplus sums and the VRNS term in float32, see
:mod:`contrastkit.losses.kernels`). A checkpoint records the config's setting, so a run resumes
in the format it started in.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from contrastkit.checks.scalars import check_choice

from .config_values import PRECISIONS

_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


@dataclass(frozen=True)
class Precision:
    """A resolved ``precision`` (``bf16``, ``fp16`` or ``fp32``) on a device type."""

    name: str
    device_type: str

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        """The autocast dtype, or ``None`` for ``fp32`` (no autocast)."""
        return _AUTOCAST_DTYPES[self.name]

    @property
    def scaled(self) -> bool:
        """Whether the loss is scaled (``fp16``): a scaler then skips overflowing steps."""
        return self.name == "fp16"

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context a step's forward pass and loss run in."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.autocast_dtype)

    def scaler(self) -> torch.amp.GradScaler:
        """A ``GradScaler`` for this precision (disabled but for ``fp16``; a disabled scaler
        steps the optimizer as it is)."""
        return torch.amp.GradScaler(self.device_type, enabled=self.scaled)


def resolve_precision(setting: str, device: torch.device) -> Precision:
    """The ``precision`` setting on ``device``: ``auto`` resolved (module docstring), and a
    ``ValueError`` naming the setting when ``device`` cannot compute in the chosen format
    (``bf16`` on a CUDA GPU without bfloat16 support)."""
    check_choice("precision", setting, PRECISIONS)
    cuda = device.type == "cuda"
    bf16_ok = cuda and torch.cuda.is_bf16_supported(including_emulation=False)
    if setting == "auto":
        setting = ("bf16" if bf16_ok else "fp16") if cuda else "fp32"
    elif setting == "bf16" and cuda and not bf16_ok:
        raise ValueError(f"precision=bf16 needs a GPU with bfloat16 support (compute capability "
                         f"8.0 or newer); {torch.cuda.get_device_name(device)} has none: use "
                         f"precision=fp16 (or auto)")
    return Precision(setting, device.type)
