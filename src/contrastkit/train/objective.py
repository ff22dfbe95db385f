"""The training objective named by a config: a library loss plus the VRNS regularizer."""

from __future__ import annotations

from contrastkit import losses

from .config import PretrainConfig


def build_loss(config: PretrainConfig, dataset_size: int) -> losses.ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective)."""
    temperature_losses = {"simclr": losses.SimCLR, "info_nce": losses.InfoNCE,
                          "dcl": losses.DCL, "dhel": losses.DHEL}
    if config.loss in temperature_losses:
        loss = temperature_losses[config.loss](temperature=config.temperature)
    elif config.loss == "siglip":
        loss = losses.SigLIP(scale=config.siglip_scale, bias=config.siglip_bias)
    elif config.loss == "spectral":
        loss = losses.Spectral()
    else:
        raise ValueError(f"loss must be one of {', '.join(temperature_losses)}, siglip, "
                         f"spectral; got {config.loss!r}")
    if config.vrns > 0:
        loss = loss + config.vrns * losses.VRNS(n=dataset_size)
    return loss
