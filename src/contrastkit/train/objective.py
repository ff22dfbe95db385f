"""The training objective named by a config: a registered loss plus the regularizers (VRNS of
the central paper's Def. 5.7, distance polarization of LMCL), all built through the loss
registry (:mod:`contrastkit.losses.registry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contrastkit.losses import ContrastiveLoss

    from .config import PretrainConfig


def _terms(config: PretrainConfig, dataset_size: int) -> list[tuple[float, str, dict]]:
    """``(weight, registered name, hyperparameters)`` of each term of the objective."""
    terms = [(1.0, config.loss, config.loss_settings())]
    if config.vrns > 0:
        terms.append((config.vrns, "vrns", {"n": dataset_size}))
    if config.polarization > 0:
        terms.append((config.polarization, "polarization",
                      {"delta_plus": config.delta_plus, "delta_minus": config.delta_minus}))
    return terms


def local_share(config: PretrainConfig) -> bool:
    """Whether every term of the objective can compute, under torch.distributed, this process's
    share of the global-batch loss from its own rows against the gathered batch (the registry's
    ``supports_distributed``). Then each process forms an ``N x WN`` block of the similarity
    matrix instead of all ``WN x WN``. Spectral, HCL, the hard-negative losses and LMCL's
    polarization cannot; with them each process computes the loss of the whole gathered batch."""
    from contrastkit import losses

    return all(losses.get(name).supports_distributed for _, name, _ in _terms(config, 2))


def build_loss(config: PretrainConfig, dataset_size: int, distributed: bool = False
               ) -> ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective) and ``config.polarization * Polarization(delta_plus, delta_minus)`` when
    ``config.polarization > 0`` (LMCL's regularizer, mean reduction). Each term gets the
    ``training_options`` its class declares.

    ``distributed=True`` builds every term with ``distributed=True`` (each process's share of
    the global loss; the mean of the shares is the loss of the global batch); it requires
    :func:`local_share`."""
    from contrastkit import losses

    if distributed and not local_share(config):
        raise ValueError(f"loss={config.loss} with polarization={config.polarization} cannot "
                         f"be computed as per-process shares; build it with distributed=False")
    options = {"distributed": True} if distributed else {}
    objective = None
    for weight, name, settings in _terms(config, dataset_size):
        term = losses.build(name, settings, **losses.get(name).training_options, **options)
        objective = term if objective is None else objective + weight * term
    return objective
