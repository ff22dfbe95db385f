r"""Matryoshka representation learning: any loss on nested prefixes of the embedding.

Kusupati et al., "Matryoshka Representation Learning", NeurIPS 2022, arXiv:2205.13147, train
one embedding whose first ``d_1 < d_2 < ... < d_m`` coordinates are each a usable embedding by
summing one loss over the prefixes:

.. math::
    L_{\mathrm{M}}(u, v) = \sum_m w_m \, L\big(u_{:, :d_m},\, v_{:, :d_m}\big)

with explicit negatives cut to the same prefix (``negatives[..., :d_m]``). The choices made here:

- **Normalization per prefix.** Each prefix is cut from the embeddings as given and handed to
  the loss, which L2-normalizes its rows (``normalize=True``, every library loss's default):
  the loss sees the unit vectors of each prefix, not the prefix of the full embedding's unit
  vector (whose norm is below 1). A loss built with ``normalize=False`` sees the raw prefixes.
- **Weights** default to 1 each (the paper's ``c_m = 1``): a sum over the prefixes, not a mean.
- **Shared settings.** The wrapped loss is one module: its temperature (SigLIP: scale and
  bias) is the same at every prefix; a learnable one (``learnable=True``) is one parameter that
  receives the sum of the prefixes' gradients, as sentence-transformers' ``MatryoshkaLoss`` does
  with its one wrapped loss.
- **Dimensions** are strictly increasing, each at most the embedding dimension (checked on
  each call); the largest need not be the full dimension (the coordinates past it are then not
  trained by this loss).

Everything the wrapped loss does, it does on each prefix: its kernel path (fused, chunked with
``chunk_size``, the plain-autograd small path), ``distributed=True``, explicit negatives and
InfoNCE's ``direction="one_way"``. :class:`Matryoshka` is a
:class:`~contrastkit.losses.ContrastiveLoss` whose ``compute`` takes the whole batch's
embeddings, so the gradient cache (:func:`contrastkit.train.grad_cache`) and sums of losses take
it as they take any loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from contrastkit.checks.prefixes import check_prefix_dims, check_prefixes_fit
from contrastkit.checks.tensors import check_negatives, check_view_shapes

from .base import ContrastiveLoss, LossOutput
from .views import SharedViews


def nested_prefix(u: torch.Tensor, v: torch.Tensor, negatives: torch.Tensor | None, dim: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The first ``dim`` coordinates of the views and of the negatives (``v`` stays ``u`` when
    it was: one tensor passed twice is normalized once)."""
    u_prefix = u[:, :dim]
    v_prefix = u_prefix if v is u else v[:, :dim]
    return u_prefix, v_prefix, None if negatives is None else negatives[..., :dim]


def _checked(u: torch.Tensor, v: torch.Tensor, negatives: torch.Tensor | None,
             dims: Sequence[int]) -> None:
    """The views' and negatives' shapes at full width, and the prefixes within it (a slice of
    negatives of another width would hide the mismatch)."""
    check_view_shapes(u, v, min_batch=1)  # the wrapped loss checks its own batch size
    if negatives is not None:
        check_negatives(negatives, u, v)
    check_prefixes_fit(dims, u.shape[-1])


def matryoshka(u: torch.Tensor, v: torch.Tensor, loss: Callable[..., torch.Tensor],
               dims: Sequence[int], weights: Sequence[float] | None = None, *,
               labels: torch.Tensor | None = None, negatives: torch.Tensor | None = None
               ) -> torch.Tensor:
    """``sum_m weights[m] * loss(u[:, :dims[m]], v[:, :dims[m]])`` (module docstring).

    ``loss`` is any loss of two views: a function (``functools.partial(losses.info_nce,
    temperature=0.05)``) or a module. ``labels`` and ``negatives`` (cut to each prefix) are
    passed to it as keyword arguments when given. ``dims``: strictly increasing, each at most
    the embedding dimension; ``weights``: one per dimension, > 0, default 1 each.

    Example:
        >>> import functools, torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 32), torch.randn(8, 32)
        >>> loss = functools.partial(losses.info_nce, temperature=0.1)
        >>> losses.matryoshka(u, v, loss, dims=(8, 16, 32)).shape
        torch.Size([])
    """
    dims, weights = check_prefix_dims(dims, weights)
    _checked(u, v, negatives, dims)
    options = {name: value for name, value in (("labels", labels), ("negatives", negatives))
               if value is not None}
    total = None
    for dim, weight in zip(dims, weights, strict=True):
        u_d, v_d, negatives_d = nested_prefix(u, v, negatives, dim)
        if negatives_d is not None:
            options["negatives"] = negatives_d
        value = weight * loss(u_d, v_d, **options)
        total = value if total is None else total + value
    assert total is not None  # dims holds at least one dimension
    return total


class Matryoshka(ContrastiveLoss):
    """Module form of :func:`matryoshka`: ``Matryoshka(losses.InfoNCE(0.05), dims=(64, 128,
    256))``. ``compute`` returns the total with each prefix's parts, named ``<part>@<dim>``
    (``info_nce@64``; a sum of losses gives each of its parts per prefix), weighted by the
    prefix's weight times the part's. It takes labels and explicit negatives where the wrapped
    loss does; ``loss.loss`` is the wrapped loss (its learned settings, its options)."""

    name = "matryoshka"

    def __init__(self, loss: ContrastiveLoss, dims: Sequence[int],
                 weights: Sequence[float] | None = None) -> None:
        super().__init__()
        if not isinstance(loss, ContrastiveLoss):
            raise ValueError(f"loss must be a contrastkit.losses.ContrastiveLoss module (e.g. "
                             f"losses.InfoNCE(0.05)), got {type(loss).__name__}")
        self.dims, self.weights = check_prefix_dims(dims, weights)
        self.loss = loss
        self.uses_labels = loss.uses_labels
        self.supports_negatives = loss.supports_negatives
        # the parts compute returns, in order (read by the trainer's plots)
        inner = list(getattr(loss, "part_names", [loss.name]))
        self.part_names = [f"{part}@{dim}" for dim in self.dims for part in inner]

    def compute(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> LossOutput:
        """The total over the prefixes and each prefix's parts (the class docstring)."""
        self._negatives_argument(negatives)
        return self.compute_shared(SharedViews(u, v, negatives), labels)

    def compute_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> LossOutput:
        """:meth:`compute` on views already wrapped (by a sum of losses it is a term of): the
        wrapped loss computes on each prefix's own views (normalized per prefix)."""
        negatives = shared.negatives if self.supports_negatives else None
        _checked(shared.u, shared.v, negatives, self.dims)
        total: torch.Tensor | None = None
        parts: dict[str, torch.Tensor] = {}
        weights: dict[str, float] = {}
        for dim, weight in zip(self.dims, self.weights, strict=True):
            u_d, v_d, negatives_d = nested_prefix(shared.u, shared.v, negatives, dim)
            output = self.loss.compute(u_d, v_d, labels, negatives_d)
            for part, value in output.parts.items():
                parts[f"{part}@{dim}"] = value
                weights[f"{part}@{dim}"] = weight * output.weights[part]
            total = weight * output.total if total is None else total + weight * output.total
        assert total is not None  # dims holds at least one dimension
        return LossOutput(total=total, parts=parts, weights=weights)

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return self.compute_shared(shared, labels).total

    def extra_repr(self) -> str:
        weights = ", ".join(f"{w:g}" for w in self.weights)
        return f"dims={self.dims}, weights=({weights})"
