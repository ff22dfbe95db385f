"""Statistics of positive- and negative-pair cosine similarities (paper Def. 4.1)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from contrastkit.losses._checks import prepare_views


@dataclass(frozen=True)
class SimilarityStats:
    """Mean and (population) variance of the cosine similarities of each kind of pair.

    ``positive``: ``u_i . v_i``; ``negative``: cross-view ``u_i . v_j`` for ``i != j`` (the
    negative pairs of Def. 4.1); ``within``: within-view ``u_i . u_j`` and ``v_i . v_j`` for
    ``i != j``. Counts are numbers of ordered pairs.
    """

    positive_mean: float
    positive_var: float
    positive_count: int
    negative_mean: float
    negative_var: float
    negative_count: int
    within_mean: float
    within_var: float
    within_count: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def similarity_stats(u: torch.Tensor, v: torch.Tensor) -> SimilarityStats:
    """Exact similarity statistics over all pairs of the two views ``u, v`` (shape ``(B, d)``).

    Rows are L2-normalized; the statistics are accumulated in float64.
    """
    with torch.no_grad():
        u, v = prepare_views(u.detach().double(), v.detach().double(), normalize=True)
        batch = u.shape[0]
        off_diagonal = ~torch.eye(batch, dtype=torch.bool, device=u.device)
        cross = u @ v.T
        positive = cross.diagonal()
        negative = cross[off_diagonal]
        within = torch.cat([(u @ u.T)[off_diagonal], (v @ v.T)[off_diagonal]])
        return SimilarityStats(
            positive_mean=float(positive.mean()),
            positive_var=float(positive.var(correction=0)),
            positive_count=batch,
            negative_mean=float(negative.mean()),
            negative_var=float(negative.var(correction=0)),
            negative_count=negative.numel(),
            within_mean=float(within.mean()),
            within_var=float(within.var(correction=0)),
            within_count=within.numel(),
        )
