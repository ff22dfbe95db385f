"""The training objective named by a config: a library loss plus the regularizers (VRNS of the
central paper's Def. 5.7, distance polarization of LMCL)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contrastkit.losses import ContrastiveLoss

    from .config import PretrainConfig

# The hard-negative losses use the importance-weighting estimator in training: it is exact and
# draws no random numbers, so a resumed run stays identical without saving sampler state.
_HARD_NEGATIVE = dict(estimator="importance")

# Each builder takes the library's losses module (imported when a loss is built, so reading a
# config does not load torch) and the config.
_LOSS_BUILDERS: dict[str, Callable[[ModuleType, PretrainConfig], ContrastiveLoss]] = {
    "simclr": lambda lib, c: lib.SimCLR(temperature=c.temperature),
    "info_nce": lambda lib, c: lib.InfoNCE(temperature=c.temperature),
    "dcl": lambda lib, c: lib.DCL(temperature=c.temperature),
    "dhel": lambda lib, c: lib.DHEL(temperature=c.temperature),
    "siglip": lambda lib, c: lib.SigLIP(scale=c.siglip_scale, bias=c.siglip_bias),
    "spectral": lambda lib, c: lib.Spectral(),
    "supcon": lambda lib, c: lib.SupCon(temperature=c.temperature),
    "hcl": lambda lib, c: lib.HCL(temperature=c.temperature, beta=c.beta, tau_plus=c.tau_plus),
    "scl": lambda lib, c: lib.SCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hscl": lambda lib, c: lib.HSCL(beta=c.beta, temperature=c.temperature, **_HARD_NEGATIVE),
    "ucl": lambda lib, c: lib.UCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hucl": lambda lib, c: lib.HUCL(beta=c.beta, temperature=c.temperature, **_HARD_NEGATIVE),
}

LOSSES = tuple(_LOSS_BUILDERS)


def build_loss(config: PretrainConfig, dataset_size: int) -> ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective) and ``config.polarization * Polarization(delta_plus, delta_minus)`` when
    ``config.polarization > 0`` (LMCL's regularizer, mean reduction)."""
    from contrastkit import losses

    if config.loss not in _LOSS_BUILDERS:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {config.loss!r}")
    loss = _LOSS_BUILDERS[config.loss](losses, config)
    if config.vrns > 0:
        loss = loss + config.vrns * losses.VRNS(n=dataset_size)
    if config.polarization > 0:
        polarization = losses.Polarization(
            delta_plus=config.delta_plus, delta_minus=config.delta_minus
        )
        loss = loss + config.polarization * polarization
    return loss
