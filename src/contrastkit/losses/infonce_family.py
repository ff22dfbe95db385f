"""The exponential members of Def. 3.1 (phi(x) = exp(x / t)): InfoNCE, SimCLR, DCL, DHEL.

Table 2 of the paper, the four rows with ``phi(x) = exp(x / t)``:

==========  ================  ==========  ============================
loss        psi               (c1, c2)    function / module
==========  ================  ==========  ============================
InfoNCE     ``log(1 + x)``    (1, 0)      :func:`info_nce`, ``InfoNCE``
SimCLR      ``log(1 + x)``    (1, 1)      :func:`simclr`, ``SimCLR``
DCL         ``log(x)``        (1, 1)      :func:`dcl`, ``DCL``
DHEL        ``log(x)``        (0, 1)      :func:`dhel`, ``DHEL``
==========  ================  ==========  ============================

With ``phi(x) = exp(x / t)``, ``phi((v_j - v_i)^T u_i) = exp(u_i^T v_j / t) / exp(u_i^T v_i / t)``,
so each anchor's term of Def. 3.1 becomes a log-sum-exp over the similarities it is normalized
against, minus the positive logit:

- ``psi(x) = log(1 + x)`` (InfoNCE, SimCLR): the positive is in the normalizer;
- ``psi(x) = log(x)`` (DCL, DHEL): it is not (the "decoupled" losses).

The flags ``cross_view`` (c1) and ``within_view`` (c2) choose the negatives. The four functions
are that one computation, :func:`exp_family_loss`, with their row's flags; they share the
signature ``(u, v, temperature, normalize=True, *, chunk_size=None, distributed=False)``, and
:func:`info_nce` also takes explicit ``negatives=`` and ``direction=`` (:mod:`.explicit_negatives`).

How it is computed (the fused path of :mod:`.kernels`): the positive logits ``u_i^T v_i / t`` cost
``O(B d)`` and go through autograd; the log-sum-exps go through one hand-written kernel over
anchors x candidates that excludes each anchor's own column (and its positive for the decoupled
losses) by writing ``-inf`` into ``B`` entries, so no mask or boolean-indexed copy of the ``B x B``
matrix exists. SimCLR and DCL stack both views (one ``2B x 2B`` matrix); InfoNCE and DHEL use one
``B x B`` matrix per view, except InfoNCE on one process, whose two directions come from one pass
over ``u v^T`` (:mod:`.kernels.two_way`). ``chunk_size`` processes anchors in row blocks with
recomputation in the backward (memory ``O(B * chunk_size)``), and ``distributed=True`` makes each
process's anchors meet every process's candidates (see :mod:`contrastkit.distributed`). Reductions
run in at least float32 with the row maximum subtracted, so the loss stays finite at t = 0.01 and
under half-precision autocast.

The temperature may be a 0-d tensor (the user's, or the modules' own with ``learnable=True``,
see :mod:`.learnable`): it then scales the ``O(B d)`` operands of the kernels, so its gradient
is exact through the chunked, symmetric and distributed paths alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.functional import cross_entropy

from contrastkit.checks.scalars import check_choice

from .explicit_negatives import DIRECTIONS, info_nce_explicit
from .kernels import (
    GlobalBatch,
    check_chunk_size,
    plain_autograd,
    positive_logits,
    row_logsumexp,
    small_logits,
    two_way_logsumexp,
)
from .learnable import Setting, TemperatureSetting, check_setting
from .registry import register
from .views import SharedViews, public_form


def exp_family_shared(
    shared: SharedViews,
    temperature: Setting,
    *,
    cross_view: bool,
    within_view: bool,
    include_positive: bool,
    normalize: bool = True,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    """Symmetric Def. 3.1 loss with ``phi = exp(x / temperature)``; see the module docstring.

    ``chunk_size`` (rows per block, default ``None``: one block) bounds forward + backward memory
    to ``O(B * chunk_size)`` by recomputing each block in the backward, with the same value and
    gradients. ``distributed=True`` under torch.distributed makes each process's rows meet the
    whole global batch as negatives and returns this process's share of the global loss (their
    mean over processes is the global loss; see :mod:`contrastkit.distributed`).
    ``temperature`` is a number or a 0-d tensor (which receives its gradient). ``shared`` holds
    the two views (:class:`SharedViews`; a composite passes one to all its terms, which then
    share the normalized, gathered batch where ``normalize`` and ``distributed`` agree).
    """
    temperature = check_setting("temperature", temperature, positive=True)
    chunk_size = check_chunk_size(chunk_size)
    batch = shared.batch(normalize, distributed)  # prepared and gathered once per composite
    scale = 1.0 / temperature
    if include_positive and cross_view and _small(batch, within_view, chunk_size):
        return _small_cross_entropy(batch, scale, within_view)
    positive = positive_logits(batch.u, batch.v, scale)
    if cross_view and within_view:
        lse = _both_views_lse(batch, scale, include_positive, chunk_size)
        return lse.mean() - positive.mean()
    if cross_view and batch.is_local:  # S = u v^T, both directions: its rows and columns
        excluded = None if include_positive else batch.own_columns().unsqueeze(1)
        lse_u, lse_v = two_way_logsumexp(batch.u, batch.v, scale, excluded, chunk_size)
    else:
        lse_u = _one_view_lse(batch.u, batch, scale, cross_view, include_positive, chunk_size)
        lse_v = _one_view_lse(batch.v, batch, scale, cross_view, include_positive, chunk_size)
    if include_positive and not cross_view:  # the positive is not among the candidates
        lse_u, lse_v = torch.logaddexp(lse_u, positive), torch.logaddexp(lse_v, positive)
    return 0.5 * (lse_u.mean() + lse_v.mean()) - positive.mean()


@public_form(exp_family_shared)
def exp_family_loss(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Symmetric Def. 3.1 loss with ``phi = exp(x / temperature)`` on two views: see
    :func:`exp_family_shared`, which this calls on a :class:`SharedViews` of ``u, v``."""
    return exp_family_shared(SharedViews(u, v), *args, **kwargs)


def _small(batch: GlobalBatch, within_view: bool, chunk_size: int | None) -> bool:
    """Whether the matrix (``[u; v]`` against ``[U; V]`` with ``within_view``, else ``u``
    against ``V``) takes the small path of :func:`.kernels.plain_autograd`."""
    views = 2 if within_view else 1
    return plain_autograd(views * batch.u.shape[0], views * batch.u_all.shape[0], chunk_size,
                          batch.u.device)


def _small_cross_entropy(batch: GlobalBatch, scale: Setting, within_view: bool) -> torch.Tensor:
    """InfoNCE and SimCLR on a small matrix: each anchor's term ``lse_a - S_a,positive`` is the
    cross-entropy of its row of logits at its positive's column, one fused operator on the
    matrix, which holds the positive logits too (:func:`.kernels.small_logits`)."""
    if within_view:  # SimCLR: [u; v] against [U; V], own columns out; u_i's positive is v_i's row
        anchors, candidates, own_columns = batch.stacked()
        logits = small_logits(anchors, candidates, scale, own_columns.unsqueeze(1))
        return cross_entropy(logits, own_columns.roll(batch.u.shape[0]))
    columns = batch.own_columns()  # InfoNCE: u against V and v against U, positives at own rows
    logits_u = small_logits(batch.u, batch.v_all, scale)
    logits_v = logits_u.T if batch.is_local else small_logits(batch.v, batch.u_all, scale)
    return 0.5 * (cross_entropy(logits_u, columns) + cross_entropy(logits_v, columns))


def _both_views_lse(batch: GlobalBatch, scale: Setting, include_positive: bool,
                    chunk_size: int | None) -> torch.Tensor:
    """Log-sum-exps of the ``2N`` anchors ``[u; v]`` against all ``2M`` embeddings ``[U; V]``."""
    anchors, candidates, self_columns = batch.stacked()
    if include_positive:
        excluded = self_columns.unsqueeze(1)
    else:  # the positive of u_i is v_i and vice versa: swap the halves
        excluded = torch.stack([self_columns, self_columns.roll(batch.u.shape[0])], dim=1)
    return row_logsumexp(anchors, candidates, scale, excluded, chunk_size)


def _one_view_lse(anchors: torch.Tensor, batch: GlobalBatch, scale: Setting, cross_view: bool,
                  include_positive: bool, chunk_size: int | None) -> torch.Tensor:
    """Log-sum-exps of one view's anchors against the other view (cross) or their own (within)."""
    own_view = anchors is batch.u
    if cross_view:
        candidates = batch.v_all if own_view else batch.u_all
        excluded = None if include_positive else batch.own_columns().unsqueeze(1)
    else:
        candidates = batch.u_all if own_view else batch.v_all
        excluded = batch.own_columns().unsqueeze(1)
    return row_logsumexp(anchors, candidates, scale, excluded, chunk_size)


class TemperatureLoss(TemperatureSetting):
    """Base of the modules whose only hyperparameter is a temperature.

    Subclasses set ``loss_fn`` (the functional form); the default temperature is that of
    ``loss_fn``'s signature. ``chunk_size`` and ``distributed`` are passed through to it.
    ``temperature`` may also be a 0-d tensor of the user's; ``learnable=True`` learns it as
    CLIP does (a parameter ``logit_scale = log(1 / t)``, scale at most 100, initialised at
    ``t = 0.07`` or at the ``temperature`` given; see :mod:`.learnable`).
    """

    loss_fn: Callable[..., torch.Tensor]
    hyperparameters = ("temperature",)
    supports_chunking = True
    supports_distributed = True

    def __init__(
        self,
        temperature: Setting | None = None,
        normalize: bool = True,
        *,
        learnable: bool = False,
        chunk_size: int | None = None,
        distributed: bool = False,
    ):
        super().__init__()
        self._init_setting("temperature", temperature, self.default_temperature(), learnable)
        self.normalize = normalize
        self.chunk_size = check_chunk_size(chunk_size)
        self.distributed = bool(distributed)

    @classmethod
    def default_temperature(cls) -> float:
        """The default ``temperature`` of the functional form."""
        return inspect.signature(cls.loss_fn).parameters["temperature"].default

    def loss_options(self) -> dict[str, object]:
        """The options passed to ``loss_fn`` beside the temperature and ``normalize``: only
        those set, so a ``loss_fn`` without them still works by default."""
        options: dict[str, object] = {}
        if self.chunk_size is not None:
            options["chunk_size"] = self.chunk_size
        if self.distributed:
            options["distributed"] = True
        return options

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        options = self.loss_options()
        loss_fn = type(self).loss_fn
        on_views = getattr(loss_fn, "on_shared_views", None)  # the members of the table
        if on_views is None:  # a loss_fn of one's own: on the views as given
            return loss_fn(shared.u, shared.v, temperature=self.setting("temperature"),
                           normalize=self.normalize, **options)
        return on_views(shared, temperature=self.setting("temperature"),
                        normalize=self.normalize, **options)

    def extra_repr(self) -> str:
        options = ", ".join(f"{name}={value!r}" for name, value in self.loss_options().items())
        return self._settings_repr() + (f", {options}" if options else "")


_OPTIONS_DOC = """
    ``chunk_size`` (rows per block: memory ``O(B * chunk_size)``) and ``distributed`` (the global
    batch under torch.distributed): see :func:`exp_family_loss`. ``temperature`` may be a 0-d
    tensor, which receives its gradient.
"""


def _member(name: str, temperature: float, *, doc: str, **negatives: bool
            ) -> Callable[..., torch.Tensor]:
    """The functional form of one row of the table: :func:`exp_family_loss` with the row's
    ``negatives`` (``cross_view``, ``within_view``, ``include_positive``) and default
    ``temperature``, named ``name``, documented by ``doc`` and the options' note."""

    def on_shared_views(shared: SharedViews, temperature: Setting = temperature,
                        normalize: bool = True, *, chunk_size: int | None = None,
                        distributed: bool = False) -> torch.Tensor:
        return exp_family_shared(shared, temperature, normalize=normalize,
                                 chunk_size=chunk_size, distributed=distributed, **negatives)

    @public_form(on_shared_views)
    def loss(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return on_shared_views(SharedViews(u, v), *args, **kwargs)

    loss.__name__ = loss.__qualname__ = name
    on_shared_views.__qualname__ = f"{name}.on_shared_views"
    on_shared_views.__doc__ = f":func:`{name}` on a :class:`SharedViews`."
    loss.__doc__ = doc.rstrip() + "\n" + _OPTIONS_DOC
    loss.on_shared_views = on_shared_views  # type: ignore[attr-defined]  # read by the module
    return loss


def info_nce_shared(
    shared: SharedViews,
    temperature: Setting = 0.1,
    normalize: bool = True,
    *,
    direction: str = "symmetric",
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    """:func:`info_nce` on a :class:`SharedViews`, whose ``negatives`` are the explicit ones."""
    if shared.negatives is None and direction == "symmetric":  # the row of the table
        return exp_family_shared(shared, temperature, normalize=normalize, chunk_size=chunk_size,
                                 distributed=distributed, cross_view=True, within_view=False,
                                 include_positive=True)
    return info_nce_explicit(shared, temperature, normalize, direction, chunk_size, distributed)


@public_form(info_nce_shared)
def info_nce(u: torch.Tensor, v: torch.Tensor, *args: Any, negatives: torch.Tensor | None = None,
             **kwargs: Any) -> torch.Tensor:
    r"""Symmetric InfoNCE (CLIP) loss, eq. (13).

    Table 2 row: ``phi = exp(x/t)``, ``psi = log(1+x)``, ``c = (1, 0)``.

    .. math::
        -\frac{1}{2B}\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_i^\top v_j/t}}
        -\frac{1}{2B}\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_j^\top v_i/t}}

    Only cross-view negatives enter. Returns a scalar tensor.

    ``negatives`` (a pool ``(M, d)`` or each anchor's own ``(B, k, d)``) join the anchors'
    candidates; ``direction="one_way"`` is the mean of the first sum's terms alone
    (sentence-transformers' MultipleNegativesRankingLoss at ``scale = 1 / t``): see
    :mod:`contrastkit.losses.explicit_negatives` for both.

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> losses.info_nce(u, v, temperature=0.1).shape
        torch.Size([])
        >>> hard = torch.randn(8, 3, 16)   # three negatives of each anchor's own
        >>> losses.info_nce(u, v, negatives=hard, direction="one_way").shape
        torch.Size([])
    """
    return info_nce_shared(SharedViews(u, v, negatives), *args, **kwargs)


info_nce.__doc__ = (info_nce.__doc__ or "").rstrip() + "\n" + _OPTIONS_DOC
info_nce.on_shared_views = info_nce_shared  # type: ignore[attr-defined]  # read by the module


@register("info_nce")
class InfoNCE(TemperatureLoss):
    """Module form of :func:`info_nce`; ``direction="one_way"`` is its one-way form, the other
    arguments are :class:`TemperatureLoss`'s, ``forward(u, v, negatives=...)`` takes negatives."""

    loss_fn = staticmethod(info_nce)
    supports_negatives = True

    def __init__(self, temperature: Setting | None = None, normalize: bool = True, *,
                 direction: str = "symmetric", **options: Any) -> None:
        super().__init__(temperature, normalize, **options)
        self.direction = check_choice("direction", direction, DIRECTIONS)

    def loss_options(self) -> dict[str, object]:
        one_way = {"direction": self.direction} if self.direction != "symmetric" else {}
        return {**super().loss_options(), **one_way}


simclr = _member(
    "simclr", 0.2, cross_view=True, within_view=True, include_positive=True,
    doc=r"""SimCLR's NT-Xent loss (Appendix A.1, item 2), averaged over all ``2B`` anchors.

    Table 2 row: ``phi = exp(x/t)``, ``psi = log(1+x)``, ``c = (1, 1)``.

    Anchor ``u_i`` is normalized against its positive ``v_i``, the cross-view negatives
    ``v_j`` and the within-view negatives ``u_j`` (``j != i``), i.e. the ``2B - 1`` other
    embeddings of the batch; likewise for anchor ``v_i``.

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> float(losses.simclr(u, v)) > 0
        True
    """,
)


@register("simclr")
class SimCLR(TemperatureLoss):
    """Module form of :func:`simclr`."""

    loss_fn = staticmethod(simclr)


dcl = _member(
    "dcl", 0.1, cross_view=True, within_view=True, include_positive=False,
    doc=r"""Decoupled contrastive loss of Yeh et al. (Appendix A.1, item 3): SimCLR
    without the positive in the normalizer.

    Table 2 row: ``phi = exp(x/t)``, ``psi = log(x)``, ``c = (1, 1)``.

    .. math::
        \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i}\big(e^{u_i^\top v_j/t} + e^{u_i^\top u_j/t}\big)
        - u_i^\top v_i/t\Big] + (\text{same with } u \leftrightarrow v)

    The paper's first line writes ``u_j^T u_i`` in the second term's normalizer; its
    rewritten form (and DCL itself) uses ``v_j^T v_i``, which is what is computed here.
    The value can be negative.
    """,
)


@register("dcl")
class DCL(TemperatureLoss):
    """Module form of :func:`dcl`."""

    loss_fn = staticmethod(dcl)


dhel = _member(
    "dhel", 0.1, cross_view=False, within_view=True, include_positive=False,
    doc=r"""Decoupled hyperspherical energy loss of Koromilas et al. (Appendix A.1,
    item 4): only within-view negatives.

    Table 2 row: ``phi = exp(x/t)``, ``psi = log(x)``, ``c = (0, 1)``.

    .. math::
        \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i} e^{u_i^\top u_j/t} - u_i^\top v_i/t\Big]
        + \frac{1}{2B}\sum_i \Big[\log\sum_{j\ne i} e^{v_i^\top v_j/t} - u_i^\top v_i/t\Big]

    (The paper's first line writes ``u_j^T u_i`` in the second term; the rewritten form, used
    here, has ``v_j^T v_i``.) The value can be negative.
    """,
)


@register("dhel")
class DHEL(TemperatureLoss):
    """Module form of :func:`dhel`."""

    loss_fn = staticmethod(dhel)
