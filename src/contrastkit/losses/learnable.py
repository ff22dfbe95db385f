"""Learnable temperature, scale and bias: the loss modules' settings as numbers, tensors the user
owns, or parameters of the loss (CLIP's logit scale, SigLIP's scale and bias).

A setting is given in one of three ways:

- a number (the default): fixed; the fused kernels then run exactly as without this module;
- a 0-d floating tensor the user owns (``temperature=torch.tensor(0.1, requires_grad=True)``):
  used as it is, gradients flow to it, the user optimizes it; the loss does not register it;
- ``learnable=True``: the loss creates its own ``nn.Parameter`` in log space (CLIP, Radford et
  al. 2021, arXiv:2103.00020; SigLIP, Zhai et al. 2023, arXiv:2303.15343):

  - a temperature ``t`` is stored as ``logit_scale = log(1 / t)``, initialised at CLIP's
    ``log(1 / 0.07)`` unless a temperature is given (the given one is the initial value);
  - SigLIP's scale is stored as ``logit_scale = log(scale)``, initialised at ``log 10``, and its
    bias as ``logit_bias``, initialised at ``-10`` (given values are the initial values);
  - the scale ``exp(logit_scale)`` is kept at most :data:`MAX_SCALE` = 100 (temperature at
    least 0.01), as CLIP and open_clip do: the parameter is projected back to
    ``<= log 100`` (in place, without gradient) at the start of every forward, which is the
    clamp those trainers apply after each optimizer step, so a plain loop needs no extra call.

A tensor setting is checked on every call (0-d, floating, finite, and positive for a
temperature or scale), which reads its value (one device synchronisation per call).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

import torch
from torch import nn

from contrastkit.checks.scalars import check_positive, check_real

from .base import ContrastiveLoss

MAX_SCALE = 100.0  # CLIP: "clipped to prevent scaling the logits by more than 100"
CLIP_TEMPERATURE = 0.07  # CLIP's initial temperature (logit scale 1/0.07)
SIGLIP_SCALE = 10.0  # SigLIP's initial t' = log 10
SIGLIP_BIAS = -10.0  # SigLIP's initial b

Setting = float | torch.Tensor


@overload
def check_setting(name: str, value: float, positive: bool) -> float: ...
@overload
def check_setting(name: str, value: Setting, positive: bool) -> Setting: ...
def check_setting(name: str, value: Setting, positive: bool) -> Setting:
    """A number, returned as a float if finite (and > 0 when ``positive``), or a 0-d floating
    tensor with such a value, returned as it is (same object, so gradients reach it).
    Anything else raises ``ValueError`` naming ``name``."""
    if not isinstance(value, torch.Tensor):
        return check_positive(name, value) if positive else check_real(name, value)
    if value.dim() != 0:
        raise ValueError(f"{name} must be a number or a 0-d tensor, got a tensor of shape "
                         f"{tuple(value.shape)}")
    if not value.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    number = float(value.detach())
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if positive and number <= 0:
        raise ValueError(f"{name} must be > 0, got {number}")
    return value


def within_clamp(name: str, initial: float) -> bool:
    """Whether ``initial``, the starting value of the learnable setting ``name``
    (``"temperature"``, ``"scale"`` or ``"bias"``), gives a scale of at most
    :data:`MAX_SCALE` (a temperature of at least ``1 / MAX_SCALE``); a bias always does."""
    kind = _KINDS[name]
    return not kind.log_scale or kind.encode(initial) <= math.log(MAX_SCALE) * (1 + 1e-12)


@dataclass(frozen=True)
class _Kind:
    """How a learnable setting is stored: the parameter's name, the map from the setting to
    the parameter's initial value, and back (after the projection of the parameter)."""

    parameter: str
    positive: bool
    encode: Callable[[float], float]
    decode: Callable[[torch.Tensor], torch.Tensor]
    log_scale: bool  # the parameter is a log scale, projected to <= log(MAX_SCALE)


_KINDS = {
    "temperature": _Kind("logit_scale", True, lambda t: math.log(1.0 / t),
                         lambda p: p.exp().reciprocal(), log_scale=True),
    "scale": _Kind("logit_scale", True, math.log, torch.exp, log_scale=True),
    "bias": _Kind("logit_bias", False, float, lambda p: p, log_scale=False),
}
_DEFAULT_INITIAL = {"temperature": CLIP_TEMPERATURE, "scale": SIGLIP_SCALE, "bias": SIGLIP_BIAS}


class LearnableLoss(ContrastiveLoss):
    """A loss module whose temperature, scale or bias may be numbers, the user's tensors or its
    own parameters (see the module docstring). Subclasses call :meth:`_init_setting` in their
    constructor for each such setting and read :meth:`setting` in ``forward``;
    ``learnable_settings`` names the settings ``learnable=True`` learns."""

    learnable_settings: tuple[str, ...] = ()

    def __init__(self):
        super().__init__()
        self._given: dict[str, Setting | None] = {}  # None: learned (a parameter)

    def _init_setting(self, name: str, value: Setting | None, default: float,
                      learnable: bool) -> None:
        """Keep setting ``name``: ``value`` (``None``: ``default``, or with ``learnable`` the
        CLIP/SigLIP initialisation) as a float, the user's tensor, or a new parameter."""
        kind = _KINDS[name]
        if not learnable:
            self._given[name] = check_setting(name, default if value is None else value,
                                              kind.positive)
            return
        if isinstance(value, torch.Tensor):
            raise ValueError(f"{name}: with learnable=True pass the initial value as a number "
                             f"(the loss creates its own parameter), or pass your own tensor "
                             f"without learnable=True")
        initial = check_setting(name, _DEFAULT_INITIAL[name] if value is None else value,
                                kind.positive)
        if not within_clamp(name, initial):
            raise ValueError(f"{name} must give a scale of at most {MAX_SCALE:g} with "
                             f"learnable=True (the clamp of CLIP), got {name}={initial:g}")
        self._given[name] = None
        self.register_parameter(kind.parameter, nn.Parameter(
            torch.tensor(kind.encode(initial), dtype=torch.get_default_dtype())))

    def setting(self, name: str) -> Setting:
        """What ``forward`` uses for ``name``: the float, the user's tensor, or the value of
        the loss's parameter (a tensor carrying its gradient), after projecting a log scale
        in place to at most ``log(MAX_SCALE)``."""
        given = self._given[name]
        if given is not None:
            return given
        kind = _KINDS[name]
        parameter = getattr(self, kind.parameter)
        if kind.log_scale:
            with torch.no_grad():
                parameter.clamp_(max=math.log(MAX_SCALE))
        return kind.decode(parameter)

    def setting_value(self, name: str) -> float:
        """The current value of ``name`` as a float (what :meth:`settings` shows); a learned
        one as the next forward will use it (projected, without changing the parameter)."""
        given = self._given[name]
        if given is None:
            kind = _KINDS[name]
            with torch.no_grad():
                parameter = getattr(self, kind.parameter)
                if kind.log_scale:
                    parameter = parameter.clamp(max=math.log(MAX_SCALE))
                given = kind.decode(parameter)
        return float(given.detach()) if isinstance(given, torch.Tensor) else given

    def learned(self) -> dict[str, float]:
        """The current value of each setting this loss learns (``{}`` if none)."""
        return {name: self.setting_value(name) for name, given in self._given.items()
                if given is None}

    def settings(self) -> dict[str, object]:
        return {name: self.setting_value(name) if name in self._given else getattr(self, name)
                for name in self.hyperparameters}

    def _settings_repr(self) -> str:
        """``temperature=0.07 (learned)`` or ``temperature=0.1 (tensor)``: the settings'
        current values, marked when learned or given as a tensor."""
        parts = []
        for name, given in self._given.items():
            mark = (" (learned)" if given is None else
                    " (tensor)" if isinstance(given, torch.Tensor) else "")
            parts.append(f"{name}={self.setting_value(name):g}{mark}")
        return ", ".join(parts)


class TemperatureSetting(LearnableLoss):
    """A :class:`LearnableLoss` whose learnable setting is one temperature: ``loss.temperature``
    is its current value as a float."""

    learnable_settings = ("temperature",)

    @property
    def temperature(self) -> float:
        return self.setting_value("temperature")


def learned_settings(loss: nn.Module) -> dict[str, float]:
    """The current values of the settings that ``loss`` (or any term of a sum of losses) learns,
    e.g. ``{"temperature": 0.0712}`` or ``{"scale": 10.3, "bias": -9.8}``."""
    values: dict[str, float] = {}
    for module in loss.modules():
        if isinstance(module, LearnableLoss):
            values.update(module.learned())
    return values


def current_settings(loss: nn.Module) -> dict[str, float]:
    """The current value of every setting of ``loss`` (or of the terms of a sum of losses)
    that may be learned, learned or fixed, e.g. ``{"scale": 10.0, "bias": -10.0}`` for a
    SigLIP loss either way."""
    values: dict[str, float] = {}
    for module in loss.modules():
        if isinstance(module, LearnableLoss):
            values.update({name: module.setting_value(name) for name in module._given})
    return values
