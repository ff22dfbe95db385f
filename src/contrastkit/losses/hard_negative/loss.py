r"""SCL, HSCL, UCL and HUCL: the generalized contrastive loss of Jiang et al., "Hard-Negative
Sampling for Contrastive Learning" (arXiv:2311.05139, 2023), with
negatives drawn from the batch as in the authors' code.

For anchor ``z_i = u_i`` (and symmetrically ``v_i``) the other view ``v`` is the pool:

- positives: every ``v_p`` with ``y_p = y_i``, the anchor's own other view ``v_i`` included
  (the code's "self" positive); with ``labels=None`` or ``positives="views"``, only ``v_i``
  (the paper's Gaussian-noise positives, where the labels still choose SCL's negatives);
- negative candidates ``N(i)``: ``"other_classes"`` (``y_j != y_i``; SCL/HSCL),
  ``"all"`` (every ``v_j``, the anchor's own positive and same-class rows included: the
  paper's UCL/HUCL code) or ``"all_but_self"`` (every ``v_j`` but ``v_i``);
- the hard-negative law over ``N(i)``, ``q_i(j) ∝ eta_1(z_i^T v_j)``, with exponential
  tilting ``eta_1(s) = e^{beta s}`` or polynomial hardening ``eta_1(s) = max(s + 1, 0)^eps``
  (``beta = 0`` or ``eps = 0``: uniform, the plain SCL/UCL);
- the loss of the pair ``(i, p)`` is ``psi_k(t_1..t_k)``, ``t_m = z_i^T (v_{n_m} - v_p) / t``.

Two estimators of the expectation over the ``k`` negatives:

- ``"resample"`` (the paper's experiments): draw ``k`` indices ``n_1..n_k`` i.i.d. from
  ``q_i`` with replacement, for every positive pair, with the probabilities detached
  (:func:`sample_from_rows`: an inverse-CDF sampler with one table per anchor);
- ``"importance"`` (Robinson et al.): the inner mean over the ``k`` draws is replaced by its
  expectation under ``q_i`` (a weighted sum over all candidates; deterministic, and the
  ``k -> infinity`` limit of the resampled mean-form loss).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import torch

from contrastkit.checks.scalars import check_choice, check_count, check_nonnegative
from contrastkit.checks.tensors import check_generator, check_labels

from ..learnable import Setting, TemperatureSetting, check_setting
from ..registry import register
from ..views import SharedViews
from .candidates import candidate_mask, negative_log_weights, positive_mask, similarities
from .feature_normalization import normalize_features, resolve_normalization
from .psi import Psi, make_psi
from .sampling import sample_from_rows

ESTIMATORS = ("resample", "importance")
CANDIDATES = ("other_classes", "all", "all_but_self")
HARDENINGS = ("exponential", "polynomial")
REDUCTIONS = ("pair", "anchor")
POSITIVES = ("labels", "views")


def hard_negative_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    labels: torch.Tensor | None = None,
    *,
    candidates: str,
    negatives: torch.Tensor | None = None,
    positives: str = "labels",
    k: int = 256,
    beta: float = 0.0,
    hardening: str = "exponential",
    epsilon: float = 0.0,
    estimator: str = "resample",
    psi: str | Callable | Psi = "infonce_mean",
    alpha: float = 1.0,
    temperature: Setting = 1.0,
    reduction: str = "pair",
    normalize: bool | str = True,
    detach_weights: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    r"""The generalized (hard-negative) contrastive loss, symmetric in the two views.

    See the module docstring for the sampling model; :func:`scl`, :func:`hscl`, :func:`ucl`
    and :func:`hucl` fix ``candidates`` (and ``beta``) for the paper's four losses.

    Args:
        u, v: the two views, shape ``(B, d)``. Pass the same tensor twice to reproduce the
            paper's single-view batches (positives = same-label rows including the anchor):
            the loss is then computed once, as its two directions are the same loss (with
            resampling, one draw of negatives instead of two, as in the authors' code).
        labels: 1-D integer tensor of length ``B``, or ``None`` (every row its own class).
        candidates: ``"other_classes"``, ``"all"`` or ``"all_but_self"``.
        negatives: explicit negatives of the anchors ``u``, each anchor's own ``(B, k, d)`` or
            a pool ``(M, d)`` (normalized with ``normalize``): they join anchor ``u_i``'s
            negative candidates, reweighted by the hardening law with them, never positives;
            the direction ``v -> u`` keeps its in-batch candidates. See
            :mod:`contrastkit.losses.explicit_negatives`.
        positives: ``"labels"`` (every same-label row of the other view) or ``"views"``
            (only the anchor's own other view, whatever the labels; the paper's
            Gaussian-noise positives of Fig. 2).
        k: negatives per positive pair, ``>= 1`` (the paper uses 256).
        beta: exponential-tilting hardness ``>= 0`` (``hardening="exponential"``).
        hardening: ``"exponential"`` or ``"polynomial"``.
        epsilon: polynomial hardness ``>= 0`` (``hardening="polynomial"``; the paper tries
            3, 5, 10, 20).
        estimator: ``"resample"`` or ``"importance"``.
        psi: ``"infonce_mean"`` (``log(1 + mean_m e^{t_m})``, the paper's experiments),
            ``"infonce_sum"`` (``log(alpha + sum_m e^{t_m})``, Definition 1), ``"triplet"``
            (``sum_m max(t_m + alpha, 0)``), or a callable on ``t`` of shape ``(..., k)``
            (resampling only).
        alpha: the ``alpha > 0`` of ``"infonce_sum"`` and ``"triplet"``.
        temperature: divides the differences ``t_m`` (the paper uses 1); the hardening acts
            on the raw inner products ``z_i^T v_j``. A number or a 0-d tensor (which receives
            its gradient).
        reduction: ``"pair"`` (mean over all positive pairs, the authors' code) or
            ``"anchor"`` (mean over each anchor's positives, then over anchors: Algorithm 1).
        normalize: ``True`` / ``"sphere"``, ``"ball"`` (the paper's default), ``"none"``
            (``f / sqrt(d)``) or ``False`` (rows as given); see
            :mod:`contrastkit.losses.hard_negative.feature_normalization`.
        detach_weights: for ``"importance"``, stop gradients through the weights ``q_i``
            (resampling probabilities are always detached).
        generator: the ``torch.Generator`` used for resampling (``None``: a fresh, unseeded
            one; the global RNG is never touched). The draws come from
            :func:`sample_from_rows`, whose stream differs from the ``torch.multinomial`` of
            earlier versions: a seed gives other negatives than it did there.

    Raises:
        ValueError: on malformed views or labels, invalid options, an anchor without a
            negative candidate, or hardening weights that vanish on every candidate.
    """
    options = _checked_options(
        candidates=candidates, positives=positives, k=k, beta=beta, hardening=hardening,
        epsilon=epsilon, estimator=estimator, psi=psi, alpha=alpha, temperature=temperature,
        reduction=reduction, normalize=normalize, detach_weights=detach_weights,
    )
    return _hard_negative_shared(SharedViews(u, v, negatives), labels, options, generator)


def _hard_negative_shared(shared: SharedViews, labels: torch.Tensor | None,
                          options: dict[str, Any], generator: torch.Generator | None
                          ) -> torch.Tensor:
    """:func:`hard_negative_loss` with checked ``options`` on a :class:`SharedViews`. Only the
    check of the views is shared with a composite's other terms: the feature normalizations
    (sphere, ball, ``f / sqrt(d)``) are applied here to the views as given, which keeps the
    paper's single-view case (``v is u``) and the dtypes exactly as they were. The explicit
    negatives (``shared.negatives``) are normalized likewise and join the anchors ``u``'s
    candidates."""
    shared.check()
    u, v, negatives = shared.u, shared.v, shared.negatives
    check_generator(generator, u.device)
    batch = u.shape[0]
    labels = (
        torch.arange(batch, device=u.device) if labels is None else check_labels(labels, batch)
    )
    one_view = v is u
    u = normalize_features(u, options["normalize"])
    v = u if one_view else normalize_features(v, options["normalize"])
    if negatives is not None:
        rows = negatives.reshape(-1, negatives.shape[-1])
        negatives = normalize_features(rows, options["normalize"]).reshape(negatives.shape)
    if options["estimator"] == "resample" and generator is None:
        generator = torch.Generator(device=u.device)
        generator.seed()
    loss_u = _directional_loss(u, v, labels, options, generator, negatives)
    if one_view:  # both directions are the same loss (the paper's code)
        return loss_u
    loss_v = _directional_loss(v, u, labels, options, generator)
    return 0.5 * (loss_u + loss_v)


def _checked_options(*, candidates: str, positives: str, k: int, beta: float, hardening: str,
                     epsilon: float, estimator: str, psi: str | Callable | Psi, alpha: float,
                     temperature: Setting, reduction: str, normalize: bool | str,
                     detach_weights: bool) -> dict[str, Any]:
    hardening = check_choice("hardening", hardening, HARDENINGS)
    beta = check_nonnegative("beta", beta)
    epsilon = check_nonnegative("epsilon", epsilon)
    if hardening == "exponential" and epsilon != 0:
        raise ValueError("epsilon is the polynomial hardness; pass hardening='polynomial'")
    if hardening == "polynomial" and beta != 0:
        raise ValueError("beta is the exponential hardness; use epsilon with polynomial hardening")
    psi = make_psi(psi, alpha)
    estimator = check_choice("estimator", estimator, ESTIMATORS)
    if estimator == "importance" and not psi.has_expectation:
        raise ValueError(
            f"psi {psi.name!r} has no importance-weighted form (it must depend on the negatives "
            "only through mean_m phi(t_m)); use estimator='resample'"
        )
    return dict(
        candidates=check_choice("candidates", candidates, CANDIDATES),
        positives=check_choice("positives", positives, POSITIVES),
        k=check_count("k (negatives per positive pair)", k, 1),
        hardening=hardening,
        hardness=beta if hardening == "exponential" else epsilon,
        estimator=estimator,
        psi=psi,
        temperature=check_setting("temperature", temperature, positive=True),
        reduction=check_choice("reduction", reduction, REDUCTIONS),
        normalize=resolve_normalization(normalize) or False,
        detach_weights=bool(detach_weights),
    )


def _directional_loss(anchors: torch.Tensor, pool: torch.Tensor, labels: torch.Tensor,
                      options: dict[str, Any], generator: torch.Generator | None,
                      negatives: torch.Tensor | None = None) -> torch.Tensor:
    """The loss of the anchors (rows of ``anchors``) against the rows of ``pool`` and their
    explicit ``negatives`` (see :mod:`.candidates`)."""
    sims = similarities(anchors, pool, negatives)
    same_class = labels.unsqueeze(1) == labels.unsqueeze(0)
    explicit = sims.shape[1] - pool.shape[0]
    mask = candidate_mask(same_class, options["candidates"], explicit)
    log_weights = negative_log_weights(sims, mask, options)
    positive = positive_mask(same_class, options["positives"])
    anchor_index, positive_index = positive.nonzero(as_tuple=True)
    positive_sims = sims[anchor_index, positive_index].unsqueeze(1)
    psi, k, temperature = options["psi"], options["k"], options["temperature"]
    if options["estimator"] == "resample":
        assert generator is not None  # _hard_negative_shared gives the resampling one
        drawn = sample_from_rows(log_weights, anchor_index, k, generator)
        t = (sims[anchor_index.unsqueeze(1), drawn] - positive_sims) / temperature
        per_pair = psi.of_samples(t)
    else:
        if options["detach_weights"]:
            log_weights = log_weights.detach()
        # index_select, not indexing: its backward is an index_add, not an accumulating
        # index_put (several times slower on the CPU)
        t = (sims.index_select(0, anchor_index) - positive_sims) / temperature
        per_pair = psi.of_expectation(t, log_weights.index_select(0, anchor_index), k)
    if options["reduction"] == "pair":
        return per_pair.mean()
    per_anchor_sum = torch.zeros(sims.shape[0], dtype=per_pair.dtype, device=sims.device)
    per_anchor_sum = per_anchor_sum.index_add(0, anchor_index, per_pair)
    return (per_anchor_sum / positive.sum(dim=1)).mean()


def scl(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor, **options: Any) -> torch.Tensor:
    """Supervised CL (SCL, eqs. 2-3): uniform negatives from the other classes.

    ``hard_negative_loss(u, v, labels, candidates="other_classes", beta=0, ...)``; ``options``
    are those of :func:`hard_negative_loss` (``k``, ``estimator``, ``psi``, ``generator``...).

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u = torch.randn(12, 4)
        >>> labels = torch.arange(12) % 3
        >>> g = torch.Generator().manual_seed(0)
        >>> float(losses.scl(u, u, labels, k=16, generator=g)) > 0
        True
    """
    return hard_negative_loss(u, v, labels, candidates="other_classes", **options)


def hscl(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor, beta: float | None = None,
         **options: Any) -> torch.Tensor:
    """Hard supervised CL (HSCL, Definition 3): SCL with negatives tilted by ``e^{beta s}``
    (``beta`` defaults to 5, the authors' default), or with ``hardening="polynomial"`` by
    ``max(s + 1, 0)^epsilon``."""
    beta = _default_beta(beta, options)
    return hard_negative_loss(u, v, labels, candidates="other_classes", beta=beta, **options)


def ucl(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
        candidates: str = "all", **options: Any) -> torch.Tensor:
    """Unsupervised CL (UCL, eq. 4): uniform negatives from the whole pool, so latent class
    collisions happen; ``candidates="all"`` (the default) also lets the anchor's own positive
    be drawn, as in the paper's code. ``labels`` only choose the positives."""
    if candidates == "other_classes":
        raise ValueError("candidates='other_classes' uses labels for negatives; that is scl()")
    return hard_negative_loss(u, v, labels, candidates=candidates, **options)


def hucl(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
         beta: float | None = None, candidates: str = "all", **options: Any) -> torch.Tensor:
    """Hard unsupervised CL (HUCL, Definition 4): UCL with tilted negatives (``beta`` as in
    :func:`hscl`)."""
    beta = _default_beta(beta, options)
    return ucl(u, v, labels, candidates=candidates, beta=beta, **options)


def _default_beta(beta: float | None, options: dict[str, Any]) -> float:
    """``beta = 5`` (the authors' default) for exponential tilting, 0 for polynomial."""
    if beta is not None:
        return beta
    return 5.0 if options.get("hardening", "exponential") == "exponential" else 0.0


class HardNegativeLoss(TemperatureSetting):
    """Module form of :func:`hard_negative_loss`; the options are fixed at construction.

    ``label_positives`` says whether ``forward``'s ``labels`` choose the positives (and, with
    ``candidates="other_classes"``, the negatives); without it, each row's only positive is its
    other view. ``temperature`` may be a 0-d tensor of the user's, and ``learnable=True`` learns
    it (see :mod:`contrastkit.losses.learnable`; initialised at the ``temperature`` given, else
    CLIP's 0.07). ``forward(u, v, labels, negatives=...)`` takes explicit negatives.
    """

    name = "hard_negative"
    supports_negatives = True
    # the exact estimator draws no random numbers, so a resumed run stays identical
    training_options = MappingProxyType({"estimator": "importance"})

    def __init__(self, *, candidates: str, label_positives: bool = True,
                 generator: torch.Generator | None = None, learnable: bool = False,
                 **options: Any) -> None:
        super().__init__()
        if candidates == "other_classes" and not label_positives:
            raise ValueError("candidates='other_classes' needs labels: set label_positives=True")
        self._init_setting("temperature", options.pop("temperature", None),
                           _DEFAULTS["temperature"], learnable)
        self.options = dict(candidates=candidates, **options)
        _checked_options(**{**_DEFAULTS, **self.options})
        self.uses_labels = bool(label_positives)
        self.generator = generator

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        if not self.uses_labels:
            labels = None
        elif labels is None:
            raise ValueError(f"labels are required by {self.name}: pass forward(u, v, labels)")
        options = _checked_options(**{**_DEFAULTS, **self.options,
                                      "temperature": self.setting("temperature")})
        return _hard_negative_shared(shared, labels, options, self.generator)

    def settings(self) -> dict[str, object]:
        return {name: self.temperature if name == "temperature"
                else self.options.get(name, _DEFAULTS[name]) for name in self.hyperparameters}

    def extra_repr(self) -> str:
        options = [f"{key}={value!r}" for key, value in self.options.items()]
        return ", ".join([self._settings_repr(), *options])


_DEFAULTS: dict[str, Any] = dict(
    positives="labels", k=256, beta=0.0, hardening="exponential", epsilon=0.0,
    estimator="resample", psi="infonce_mean", alpha=1.0, temperature=1.0, reduction="pair",
    normalize=True, detach_weights=False)


@register("scl")
class SCL(HardNegativeLoss):
    """Module form of :func:`scl`."""

    hyperparameters = ("temperature",)
    uses_labels = True

    def __init__(self, **options: Any) -> None:
        super().__init__(candidates="other_classes", **options)


@register("hscl")
class HSCL(HardNegativeLoss):
    """Module form of :func:`hscl`."""

    hyperparameters = ("temperature", "beta")
    uses_labels = True

    def __init__(self, beta: float | None = None, **options: Any) -> None:
        beta = _default_beta(beta, options)
        super().__init__(candidates="other_classes", beta=beta, **options)


@register("ucl")
class UCL(HardNegativeLoss):
    """Module form of :func:`ucl`; ``label_positives=False`` by default (SimCLR-style pairs)."""

    hyperparameters: tuple[str, ...] = ("temperature",)

    def __init__(self, candidates: str = "all", label_positives: bool = False,
                 **options: Any) -> None:
        if candidates == "other_classes":
            raise ValueError("candidates='other_classes' uses labels for negatives; that is SCL")
        super().__init__(candidates=candidates, label_positives=label_positives, **options)


@register("hucl")
class HUCL(UCL):
    """Module form of :func:`hucl`."""

    hyperparameters = ("temperature", "beta")

    def __init__(self, beta: float | None = None, **options: Any) -> None:
        super().__init__(beta=_default_beta(beta, options), **options)
