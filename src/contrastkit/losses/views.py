"""The two views a loss receives: validated, brought to one dtype, rows normalized.

:class:`SharedViews` holds them for every term of a composed objective
(``SimCLR(0.2) + 30 * VRNS(n)``): :meth:`CompositeLoss.compute
<contrastkit.losses.CompositeLoss.compute>` builds one per call and hands it to each term's
``forward_shared``, so the work the terms have in common is done once. Each piece is computed
on first use and cached under exactly the settings that determine it, so two terms share it
only when it is provably the same tensor:

- the check of the views (:func:`~contrastkit.checks.tensors.check_views`): once per call. Its
  finiteness part, a reduction and a host sync, is skipped when the rows are normalized and
  every row's norm came out finite (:func:`~contrastkit.rows.unit_rows_reporting`), which
  proves every entry finite;
- the views in one dtype with their rows normalized (:meth:`SharedViews.prepared`): keyed on the
  dtype (the wider of the two views', or at least ``at_least``: VRNS asks for float32) and on
  ``normalize``;
- the batch seen under torch.distributed (:meth:`SharedViews.batch`, the gather of
  :func:`.kernels.global_batch`): keyed on the same and on ``distributed``;
- the plain-autograd similarity products ``u u^T``, ``v v^T``, ``u v^T`` of the prepared views
  (:meth:`SharedViews.similarities`, used by LMCL's polarization and the spectral loss): keyed on
  the same and on the autocast state.

The fused kernels of SimCLR, InfoNCE, DCL, DHEL, SupCon and SigLIP never expose their similarity
matrix (they exponentiate the logits in place and keep only ``exp(S - c)`` for the backward), so
no other term can reuse it; and VRNS works with ``d x d`` Gram matrices (or, at ``B <= 2d``,
float64 similarities of its own).

Each loss is written once, on a :class:`SharedViews` (``vrns_shared(shared, n, ...)``); its
public function of the two views (``vrns(u, v, n, ...)``) is built from it by
:func:`public_form`, which gives it the same argument list.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from contrastkit.checks.tensors import (
    check_finite_tensor,
    check_finite_views,
    check_negatives,
    check_view_shapes,
)
from contrastkit.dtypes import autocast_off, cast, promoted
from contrastkit.rows import unit_rows_reporting

from .kernels import GlobalBatch, global_batch

SIMILARITY_PAIRS = ("uu", "vv", "uv")


class SharedViews:
    """Two views ``u, v`` (shape ``(B, d)``) and what the loss terms computed on them share.

    Nothing is computed at construction: the views are checked on the first request (so a
    term that does not take shared views, e.g. a user's loss with its own ``forward``, sees
    them exactly as given), and each prepared form on its first request, then cached for the
    other terms (see the module docstring). One instance serves one evaluation of the loss:
    its cache holds tensors of that evaluation's autograd graph.

    Explicit ``negatives`` (``None``, a pool ``(M, d)`` or each anchor's own ``(B, k, d)``;
    see :mod:`contrastkit.losses.explicit_negatives`) are checked with the views and prepared
    with them (same dtype, rows normalized in the same pass, the pool gathered with the batch);
    a term that takes none computes on the views alone.

    Attributes:
        u, v: the views as given.
        negatives: the explicit negatives as given, or ``None``.
    """

    def __init__(self, u: torch.Tensor, v: torch.Tensor,
                 negatives: torch.Tensor | None = None):
        self.u, self.v, self.negatives = u, v, negatives
        self._shapes_checked = self._finite = False
        self._cache: dict[tuple, Any] = {}  # keyed by what each entry is: see the methods

    @property
    def device(self) -> torch.device:
        return self.u.device

    def check(self) -> None:
        """Validate the views (:func:`~contrastkit.checks.tensors.check_views`) and the
        negatives (:func:`~contrastkit.checks.tensors.check_negatives`), once."""
        self._check_shapes()
        if not self._finite:
            check_finite_views(self.u, self.v)
            if self.negatives is not None:
                check_finite_tensor("negatives", self.negatives)
            self._finite = True

    def _check_shapes(self) -> None:
        if not self._shapes_checked:
            check_view_shapes(self.u, self.v)
            if self.negatives is not None:
                check_negatives(self.negatives, self.u, self.v)
            self._shapes_checked = True

    def dtype(self, at_least: torch.dtype | None = None) -> torch.dtype:
        """The dtype of the prepared views: the wider of the two (as torch promotes), and at
        least ``at_least`` when given (the views' shapes and dtypes are checked first)."""
        self._check_shapes()
        dtype = promoted(self.u.dtype, self.v.dtype)
        return dtype if at_least is None else promoted(dtype, at_least)

    def prepared(self, normalize: bool, at_least: torch.dtype | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """The checked views in :meth:`dtype` ``(at_least)``, rows L2-normalized
        (:func:`~contrastkit.rows.unit_rows`) when ``normalize`` is true.

        Computed with autocast disabled; the cast and the row normalization contain no
        operation autocast would run in lower precision (:func:`~contrastkit.rows.unit_rows`
        works in at least float32), so the result is the one the terms computed on their own,
        with or without autocast. When ``v`` is ``u`` (one tensor passed twice) it is normalized
        once; normalized half-precision views are the float32 ones rounded, so every term of a
        composite shares one normalization (and its one host sync) whatever precision it asks
        for. A view with a NaN or an infinity is a ``ValueError`` (:meth:`check`, whose
        reduction is skipped when the normalization proved every entry finite). The negatives,
        if any, are prepared in the same pass (:meth:`prepared_negatives`).
        """
        dtype = self.dtype(at_least)
        key = ("views", dtype, bool(normalize))
        wide = promoted(dtype, torch.float32)
        if key not in self._cache and normalize and dtype != wide:
            # half-precision rows are normalized in float32 and rounded (unit_rows): round the
            # float32 rows another term (VRNS) uses, with the one normalization and host sync
            wide_u, wide_v = self.prepared(True, wide)
            u = cast(wide_u, dtype)
            self._cache[key] = (u, u if wide_v is wide_u else cast(wide_v, dtype))
            if self.negatives is not None:
                self._cache[("negatives", dtype, True)] = cast(
                    self._cache[("negatives", wide, True)], dtype)
        if key not in self._cache:
            given = [self.u] if self.v is self.u else [self.u, self.v]  # one tensor twice: once
            if self.negatives is not None:  # their rows, with the views' (one host sync)
                given.append(self.negatives.reshape(-1, self.negatives.shape[-1]))
            views: Sequence[torch.Tensor] = [cast(view, dtype) for view in given]
            finite = False  # the cast only widens, so it keeps the entries finite or not
            if normalize:
                with autocast_off(self.device.type):
                    views, finite = unit_rows_reporting(*views)  # one host sync for both
            self._finite = self._finite or finite
            self.check()  # nothing left to do when the normalization proved the views finite
            if self.negatives is not None:
                *views, negatives = views
                self._cache[("negatives", dtype, bool(normalize))] = negatives.view(
                    self.negatives.shape)
            self._cache[key] = (views[0], views[-1])
        return self._cache[key]

    def prepared_negatives(self, normalize: bool, at_least: torch.dtype | None = None
                           ) -> torch.Tensor | None:
        """The negatives as :meth:`prepared` prepares the views (their dtype, rows normalized
        with ``normalize``), in their shape; ``None`` without negatives."""
        if self.negatives is None:
            return None
        self.prepared(normalize, at_least)
        return self._cache[("negatives", self.dtype(at_least), bool(normalize))]

    def batch(self, normalize: bool, distributed: bool,
              at_least: torch.dtype | None = None) -> GlobalBatch:
        """:func:`.kernels.global_batch` of :meth:`prepared` ``(normalize, at_least)``: this
        process's rows and, with ``distributed`` under torch.distributed, every process's rows
        gathered with their gradients (one gather per view and setting), with the
        :meth:`prepared_negatives` (a pool gathered likewise)."""
        key = ("batch", self.dtype(at_least), bool(normalize), bool(distributed))
        if key not in self._cache:
            u, v = self.prepared(normalize, at_least)
            negatives = self.prepared_negatives(normalize, at_least)
            with autocast_off(self.device.type):
                self._cache[key] = global_batch(u, v, bool(distributed), negatives)
        return self._cache[key]

    def similarities(self, pair: str, normalize: bool) -> torch.Tensor:
        """The ``B x B`` product of the prepared views named by ``pair``: ``"uu"`` for
        ``u u^T``, ``"vv"`` for ``v v^T``, ``"uv"`` for ``u v^T``, in plain autograd, under the
        caller's autocast state (part of the cache key, with the dtype and ``normalize``).

        On unit rows ``s_ij = u_i . u_j`` gives every distance a term needs:
        ``||u_i - u_j||^2 = 2 - 2 s_ij`` (LMCL's ``D_ij = (1 - s_ij) / 2``, Eq. 3).
        """
        if pair not in SIMILARITY_PAIRS:
            raise ValueError(f"pair must be one of {SIMILARITY_PAIRS}, got {pair!r}")
        self.check()
        device = self.device.type
        autocast = (torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device)
                    else None)
        key = ("similarities", pair, self.dtype(), bool(normalize), autocast)
        if key not in self._cache:
            u, v = self.prepared(normalize)
            left, right = {"uu": (u, u), "vv": (v, v), "uv": (u, v)}[pair]
            self._cache[key] = left @ right.T
        return self._cache[key]


def prepare_views(
    u: torch.Tensor, v: torch.Tensor, normalize: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate two views, bring them to one dtype (the wider of the two, as torch promotes)
    and L2-normalize their rows when ``normalize`` is true (:meth:`SharedViews.prepared` of a
    one-off :class:`SharedViews`)."""
    return SharedViews(u, v).prepared(normalize)


_VIEW = inspect.Parameter.POSITIONAL_OR_KEYWORD
_OWN = inspect.Parameter.KEYWORD_ONLY
_PASSED_ON = [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]


def public_form(twin: Callable[..., torch.Tensor]
                ) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    """Decorator that makes a function of the views the public form of ``twin``, the same loss
    on a :class:`SharedViews` (``vrns`` of ``vrns_shared``), so that the loss's argument list is
    written once, in ``twin``, and its documentation once, in the public function::

        @public_form(vrns_shared)
        def vrns(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            '''The documentation of the loss.'''
            return vrns_shared(SharedViews(u, v), *args, **kwargs)

    The decorated function takes its views, then passes everything else on; it may also take
    keyword-only arguments of its own, which go into the :class:`SharedViews` (``negatives``:
    ``def info_nce(u, v, *args, negatives=None, **kwargs)``). Its ``__signature__`` (what
    :func:`inspect.signature`, ``help()`` and the modules read) is built here, once at import:
    its own view parameters followed by ``twin``'s after ``shared``, its own keyword-only ones
    first among the keyword-only, with ``twin``'s return annotation. A call costs nothing more
    than the call of ``twin``.
    """
    twin_signature = inspect.signature(twin)
    first, *rest = twin_signature.parameters.values()
    if first.name != "shared":
        raise TypeError(f"{twin.__qualname__} should take the shared views first, as 'shared'")

    def decorate(public: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        parameters = list(inspect.signature(public).parameters.values())
        views = [p for p in parameters if p.kind is _VIEW]
        own = [p for p in parameters if p.kind is _OWN]
        passed_on = [p.kind for p in parameters[len(views):] if p.kind is not _OWN]
        if not views or passed_on != _PASSED_ON:
            raise TypeError(f"{public.__qualname__} should take its views, then *args, **kwargs")
        positional = [p for p in rest if p.kind is not _OWN]
        signature = inspect.Signature(
            [*views, *positional, *own, *(p for p in rest if p.kind is _OWN)],
            return_annotation=twin_signature.return_annotation)
        annotations = {p.name: p.annotation for p in signature.parameters.values()
                       if p.annotation is not p.empty}
        if signature.return_annotation is not signature.empty:
            annotations["return"] = signature.return_annotation
        # what inspect.signature reads: a function attribute, which mypy does not know of
        public.__signature__ = signature  # type: ignore[attr-defined]
        public.__annotations__ = annotations
        return public

    return decorate
