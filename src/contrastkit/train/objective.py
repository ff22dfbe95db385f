"""The training objective named by a config: a library loss plus the regularizers (VRNS of the
central paper's Def. 5.7, distance polarization of LMCL)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from contrastkit import losses

if TYPE_CHECKING:
    from .config import PretrainConfig

# The hard-negative losses use the importance-weighting estimator in training: it is exact and
# draws no random numbers, so a resumed run stays identical without saving sampler state.
_HARD_NEGATIVE = dict(estimator="importance")

_LOSS_BUILDERS: dict[str, Callable[[PretrainConfig], losses.ContrastiveLoss]] = {
    "simclr": lambda c: losses.SimCLR(temperature=c.temperature),
    "info_nce": lambda c: losses.InfoNCE(temperature=c.temperature),
    "dcl": lambda c: losses.DCL(temperature=c.temperature),
    "dhel": lambda c: losses.DHEL(temperature=c.temperature),
    "siglip": lambda c: losses.SigLIP(scale=c.siglip_scale, bias=c.siglip_bias),
    "spectral": lambda c: losses.Spectral(),
    "supcon": lambda c: losses.SupCon(temperature=c.temperature),
    "hcl": lambda c: losses.HCL(temperature=c.temperature, beta=c.beta, tau_plus=c.tau_plus),
    "scl": lambda c: losses.SCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hscl": lambda c: losses.HSCL(beta=c.beta, temperature=c.temperature, **_HARD_NEGATIVE),
    "ucl": lambda c: losses.UCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hucl": lambda c: losses.HUCL(beta=c.beta, temperature=c.temperature, **_HARD_NEGATIVE),
}

LOSSES = tuple(_LOSS_BUILDERS)
SUPERVISED_LOSSES = ("supcon", "scl", "hscl")


def build_loss(config: PretrainConfig, dataset_size: int) -> losses.ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective) and ``config.polarization * Polarization(delta_plus, delta_minus)`` when
    ``config.polarization > 0`` (LMCL's regularizer, mean reduction)."""
    if config.loss not in _LOSS_BUILDERS:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {config.loss!r}")
    loss = _LOSS_BUILDERS[config.loss](config)
    if config.vrns > 0:
        loss = loss + config.vrns * losses.VRNS(n=dataset_size)
    if config.polarization > 0:
        polarization = losses.Polarization(
            delta_plus=config.delta_plus, delta_minus=config.delta_minus
        )
        loss = loss + config.polarization * polarization
    return loss
