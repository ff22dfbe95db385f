"""Histograms of pair similarities (or LMCL distances) and their plot.

LMCL (Chen et al., distance polarization) reads contrastive learning through the histogram of
the normalized distances ``D_ij = (1 - z_i . z_j) / 2`` in ``[0, 1]`` (their eq. 3, Fig. 2):
unimodal for plain contrastive learning, bimodal with a margin for supervised metric learning.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from contrastkit.checks.tensors import check_labels

from ._inputs import as_float64_features, as_float64_views, check_block_size
from ._pairs import reduce_pairs

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

SCALES = {"similarity": (-1.0, 1.0), "distance": (0.0, 1.0)}


@dataclass(frozen=True)
class SimilarityHistogram:
    """Counts of ordered pairs per bin, for each kind of pair.

    ``edges`` has ``bins + 1`` entries over ``[-1, 1]`` (cosine similarity) or ``[0, 1]``
    (LMCL distance ``(1 - s) / 2``); ``counts[kind]`` is an int64 tensor of ``bins`` entries,
    for the kinds of :func:`similarity_histogram`.
    """

    edges: torch.Tensor
    counts: dict[str, torch.Tensor]
    scale: str

    def density(self, kind: str) -> torch.Tensor:
        """Counts of ``kind`` normalized to integrate to 1 over the range."""
        counts = self.counts[kind].to(torch.float64)
        widths = self.edges[1:] - self.edges[:-1]
        total = counts.sum()
        return counts / (total * widths) if total > 0 else counts

    def as_dict(self) -> dict:
        return {
            "scale": self.scale,
            "edges": self.edges.tolist(),
            "counts": {kind: counts.tolist() for kind, counts in self.counts.items()},
        }


def similarity_histogram(
    u: torch.Tensor,
    v: torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
    *,
    bins: int = 50,
    scale: str = "similarity",
    block_size: int = 512,
) -> SimilarityHistogram:
    """Exact histogram of the cosine similarities of every kind of pair, block-wise.

    With two views ``u, v``: kinds ``positive``, ``negative`` (cross-view ``i != j``) and
    ``within``; with ``v=None``, ``u`` is one set of features and only ``within`` is counted.
    ``labels`` add the ``*_same_class`` / ``*_different_class`` splits. Pairs are ordered
    (each unordered within-view pair counts twice), as in :func:`similarity_stats`. Rows are
    L2-normalized; memory is ``O(block_size^2)``.

    Example:
        >>> import torch
        >>> u = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> h = similarity_histogram(u, u, bins=2)
        >>> h.counts["positive"].tolist(), h.counts["negative"].tolist()
        ([0, 2], [0, 2])
    """
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
        raise ValueError(f"bins must be an integer >= 1, got {bins!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {tuple(SCALES)}, got {scale!r}")
    block_size = check_block_size(block_size)
    if v is None:
        u = as_float64_features("u", u, normalize=True)
    else:
        u, v = as_float64_views(u, v)
    if labels is not None:
        labels = check_labels(labels, u.shape[0], device=u.device)
    low, high = SCALES[scale]

    def count(similarities: torch.Tensor) -> torch.Tensor:
        values = similarities if scale == "similarity" else (1 - similarities) / 2
        # clamp rounding just outside the range (|s| = 1 + 1e-16) into the end bins
        values = values.reshape(-1).clamp(low, high)
        return torch.histc(values, bins=bins, min=low, max=high).to(torch.int64).cpu()

    counts = reduce_pairs(u, v, labels, block_size, count)
    edges = torch.linspace(low, high, bins + 1, dtype=torch.float64)
    return SimilarityHistogram(edges=edges, counts=counts, scale=scale)


def plot_similarity_histogram(
    histogram: SimilarityHistogram,
    path: str | Path | None = None,
    *,
    kinds: tuple[str, ...] | None = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure | SubFigure:
    """Plot the densities of ``kinds`` (default: positive vs negative, or same vs different class).

    Draws into ``ax`` if given, else into a new matplotlib ``Figure`` (no pyplot state), which
    is saved to ``path`` when given and returned. Needs matplotlib (``pip install
    'contrastkit[train]'``).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting needs matplotlib: pip install 'contrastkit[train]' (or matplotlib)"
        ) from error
    kinds = kinds or _default_kinds(histogram)
    for kind in kinds:
        if kind not in histogram.counts:
            raise ValueError(
                f"kinds: {kind!r} is not in the histogram, which has {sorted(histogram.counts)}"
            )
    figure = None
    if ax is None:
        figure = Figure(figsize=(6, 4), constrained_layout=True)
        ax = figure.add_subplot()
    edges = histogram.edges.numpy()
    for kind in kinds:
        density = histogram.density(kind).numpy()
        label = f"{kind.replace('_', ' ')} ({int(histogram.counts[kind].sum()):,} pairs)"
        ax.stairs(density, edges, label=label, fill=True, alpha=0.45)
    ax.set_xlabel("cosine similarity" if histogram.scale == "similarity" else "distance (1 - s)/2")
    ax.set_ylabel("density")
    ax.legend()
    if title:
        ax.set_title(title)
    if path is not None:
        # a SubFigure's axes would need their root figure's savefig: given axes of a Figure
        (figure or ax.figure).savefig(path, dpi=120)  # type: ignore[union-attr]
    return figure or ax.figure


def _default_kinds(histogram: SimilarityHistogram) -> tuple[str, ...]:
    if "positive" in histogram.counts:
        return ("positive", "negative")
    if "within_same_class" in histogram.counts:
        return ("within_same_class", "within_different_class")
    return ("within",)
