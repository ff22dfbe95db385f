"""The training objective named by a config: a registered loss plus the regularizers (VRNS of
the central paper's Def. 5.7, distance polarization of LMCL), all built through the loss
registry (:mod:`contrastkit.losses.registry`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit import distributed as dist_utils

if TYPE_CHECKING:
    import torch

    from contrastkit.losses import ContrastiveLoss

    from .config import PretrainConfig


def _terms(config: PretrainConfig, dataset_size: int) -> list[tuple[float, str, dict, dict]]:
    """``(weight, registered name, hyperparameters, other constructor arguments)`` of each term
    of the objective."""
    terms: list[tuple[float, str, dict, dict]] = [(1.0, config.loss, config.loss_settings(), {})]
    if config.vrns > 0:
        terms.append((config.vrns, "vrns", {"n": dataset_size}, {}))
    if config.polarization > 0:
        terms.append((config.polarization, "polarization",
                      {"delta_plus": config.delta_plus, "delta_minus": config.delta_minus},
                      {"reduction": config.polarization_reduction}))
    return terms


def local_share(config: PretrainConfig) -> bool:
    """Whether every term of the objective can compute, under torch.distributed, this process's
    share of the global-batch loss from its own rows against the gathered batch (the registry's
    ``supports_distributed``). Then each process forms an ``N x WN`` block of the similarity
    matrix instead of all ``WN x WN``. Spectral, HCL, the hard-negative losses and LMCL's
    polarization cannot; with them each process computes the loss of the whole gathered batch."""
    from contrastkit import losses

    return all(losses.get(name).supports_distributed for _, name, _, _ in _terms(config, 2))


def build_loss(config: PretrainConfig, dataset_size: int, distributed: bool = False
               ) -> ContrastiveLoss:
    """``config.loss`` with its hyperparameters, plus ``config.vrns * VRNS(n=dataset_size)``
    when ``config.vrns > 0`` (``loss=simclr temperature=0.2 vrns=30`` is the paper's Table 1
    objective) and ``config.polarization * Polarization(delta_plus, delta_minus,
    reduction=config.polarization_reduction)`` when ``config.polarization > 0`` (LMCL's
    regularizer, by default the mean over the batch's pairs). Each term gets the
    ``training_options`` its class declares. With ``config.learn_temperature`` the loss (not the
    regularizers) is built with ``learnable=True``: its temperature (siglip: scale and bias)
    becomes a parameter of the objective, initialised at the config's value.

    ``distributed=True`` builds every term with ``distributed=True`` (each process's share of
    the global loss; the mean of the shares is the loss of the global batch); it requires
    :func:`local_share`.

    With ``config.matryoshka_dims`` the whole objective (loss and regularizers) is applied to
    each of those nested prefixes of the embedding and weighted by ``matryoshka_weights``
    (:class:`~contrastkit.losses.Matryoshka`; its parts are logged as ``<part>@<dim>``)."""
    from contrastkit import losses

    from .matryoshka import matryoshka_prefixes

    if distributed and not local_share(config):
        raise ValueError(f"loss={config.loss} with polarization={config.polarization} cannot "
                         f"be computed as per-process shares; build it with distributed=False")
    options = {"distributed": True} if distributed else {}
    objective = None
    for index, (weight, name, settings, own) in enumerate(_terms(config, dataset_size)):
        learnable = {"learnable": True} if config.learn_temperature and index == 0 else {}
        term = losses.build(name, settings, **own, **losses.get(name).training_options,
                            **options, **learnable)
        objective = term if objective is None else objective + weight * term
    assert objective is not None  # the loss is a term
    prefixes = matryoshka_prefixes(config)
    return objective if prefixes is None else losses.Matryoshka(objective, *prefixes)


def add_loss_parameters(optimizer: torch.optim.Optimizer, objective: torch.nn.Module) -> None:
    """Give ``optimizer`` the objective's own parameters (a learned temperature, scale, bias) as
    a group of its own (:func:`~contrastkit.train.optim.scalar_group`): no weight decay and no
    trust ratio, and Adam steps, as CLIP and SigLIP train them; nothing when it has none. Call
    it before building the lr schedule, which then covers the group too."""
    from .optim import scalar_group

    parameters = list(objective.parameters())
    if parameters:
        optimizer.add_param_group(scalar_group(optimizer, parameters))


def average_loss_gradients(objective: torch.nn.Module) -> None:
    """Under torch.distributed, replace the gradients of the objective's own parameters by
    their mean over processes (DDP averages only the model's): with per-process shares of the
    loss that mean is the global-batch gradient, so every process keeps the same value."""
    for parameter in objective.parameters():
        if parameter.grad is not None:
            parameter.grad = dist_utils.all_reduce_mean(parameter.grad)


def learned_metrics(objective: torch.nn.Module, batch_size: int,
                    measured: dict | None = None, dim: int | None = None) -> dict[str, object]:
    """The objective's learned settings now, under their config keys (``temperature``, or
    ``siglip_scale`` and ``siglip_bias``; none when nothing is learned). For siglip, learned or
    fixed, also where the sigmoid theory puts the optimum of a batch of ``batch_size`` pairs
    at the current ``(t, b) = (scale, -bias)`` (:func:`contrastkit.theory.phase_point`):
    ``siglip_t``, ``siglip_b``, ``siglip_regime`` (``"etf"``, ``"intermediate"`` or
    ``"antipodal"``), the optimum's positive and negative similarities
    ``siglip_predicted_pos`` and ``siglip_predicted_neg``, beside the ``measured`` ones
    (``pos_sim_mean`` and ``neg_sim_mean`` of the metrics given, as ``siglip_measured_pos``
    and ``siglip_measured_neg``), ``siglip_optimum_s``, the optimal normalized positive
    similarity ``s = (1 + c*) / 2`` (1 at the ETF, 0 antipodal), and, given the embedding
    dimension ``dim``, ``siglip_theory_exact`` (1.0 when ``dim >= batch_size``, where the
    theory is exact)."""
    from contrastkit.losses.learnable import current_settings, learned_settings
    from contrastkit.theory import phase_point

    from .config import LOSS_SETTINGS

    values = learned_settings(objective)
    metrics: dict[str, object] = {LOSS_SETTINGS[name]: value for name, value in values.items()}
    current = current_settings(objective)
    if "scale" in current and "bias" in current:
        measured = measured or {}
        point = phase_point(batch_size, current["scale"], current["bias"],
                            measured.get("pos_sim_mean"), measured.get("neg_sim_mean"),
                            dim=dim)
        metrics.update(point, siglip_optimum_s=(1.0 + float(point["siglip_predicted_pos"])) / 2.0)
    return metrics


def embedding_dim(encoder: torch.nn.Module, config: PretrainConfig) -> int | None:
    """The dimension of the embeddings the loss sees: the two towers' ``embed_dim``, the
    built-in encoder's ``projector_out``; ``None`` for the user's own encoder."""
    if hasattr(encoder, "embed_dim"):
        return encoder.embed_dim  # type: ignore[return-value]  # an int, typed as a module's
    return None if config.user_encoder else config.projector_out
