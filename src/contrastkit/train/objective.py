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
# config does not load torch), the config, and the options of the losses that can compute one
# process's share of the global-batch loss (``distributed=True``; see :func:`local_share`).
_LOSS_BUILDERS: dict[str, Callable[[ModuleType, PretrainConfig, dict], ContrastiveLoss]] = {
    "simclr": lambda lib, c, o: lib.SimCLR(temperature=c.temperature, **o),
    "info_nce": lambda lib, c, o: lib.InfoNCE(temperature=c.temperature, **o),
    "dcl": lambda lib, c, o: lib.DCL(temperature=c.temperature, **o),
    "dhel": lambda lib, c, o: lib.DHEL(temperature=c.temperature, **o),
    "siglip": lambda lib, c, o: lib.SigLIP(scale=c.siglip_scale, bias=c.siglip_bias, **o),
    "supcon": lambda lib, c, o: lib.SupCon(temperature=c.temperature, **o),
    "spectral": lambda lib, c, o: lib.Spectral(),
    "hcl": lambda lib, c, o: lib.HCL(temperature=c.temperature, beta=c.beta,
                                     tau_plus=c.tau_plus),
    "scl": lambda lib, c, o: lib.SCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hscl": lambda lib, c, o: lib.HSCL(beta=c.beta, temperature=c.temperature,
                                       **_HARD_NEGATIVE),
    "ucl": lambda lib, c, o: lib.UCL(temperature=c.temperature, **_HARD_NEGATIVE),
    "hucl": lambda lib, c, o: lib.HUCL(beta=c.beta, temperature=c.temperature,
                                       **_HARD_NEGATIVE),
}
_LOCAL_SHARE = ("simclr", "info_nce", "dcl", "dhel", "siglip", "supcon")  # and VRNS

LOSSES = tuple(_LOSS_BUILDERS)


def local_share(config: PretrainConfig) -> bool:
    """Whether every term of the objective can compute, under torch.distributed, this process's
    share of the global-batch loss from its own rows against the gathered batch (the losses'
    ``distributed=True``). Then each process forms an ``N x WN`` block of the similarity matrix
    instead of all ``WN x WN``. Spectral, HCL, the hard-negative losses and LMCL's polarization
    cannot; with them each process computes the loss of the whole gathered batch."""
    return config.loss in _LOCAL_SHARE and config.polarization == 0


def build_loss(config: PretrainConfig, dataset_size: int, distributed: bool = False
               ) -> ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective) and ``config.polarization * Polarization(delta_plus, delta_minus)`` when
    ``config.polarization > 0`` (LMCL's regularizer, mean reduction).

    ``distributed=True`` builds every term with ``distributed=True`` (each process's share of
    the global loss; the mean of the shares is the loss of the global batch); it requires
    :func:`local_share`."""
    from contrastkit import losses

    if config.loss not in _LOSS_BUILDERS:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}; got {config.loss!r}")
    if distributed and not local_share(config):
        raise ValueError(f"loss={config.loss} with polarization={config.polarization} cannot "
                         f"be computed as per-process shares; build it with distributed=False")
    options = {"distributed": True} if distributed else {}
    loss = _LOSS_BUILDERS[config.loss](losses, config, options)
    if config.vrns > 0:
        loss = loss + config.vrns * losses.VRNS(n=dataset_size, **options)
    if config.polarization > 0:
        polarization = losses.Polarization(
            delta_plus=config.delta_plus, delta_minus=config.delta_minus
        )
        loss = loss + config.polarization * polarization
    return loss
