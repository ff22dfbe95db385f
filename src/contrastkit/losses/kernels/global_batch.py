"""The batch a loss sees: this process's rows as anchors, every process's rows as candidates.

Outside torch.distributed (or with ``distributed=False``) both are the local batch. Under
torch.distributed with ``distributed=True`` the candidates are gathered with gradients
(:func:`contrastkit.distributed.gather_rows`); see :mod:`contrastkit.distributed` for why each
process's share of the loss, averaged by DDP, gives the single-process gradient.

Explicit negatives (:mod:`contrastkit.losses.explicit_negatives`) travel with the batch: a pool
``(M, d)`` that every anchor meets is gathered like the candidates (each process's anchors meet
every process's pool, as on one process with the pools concatenated); each anchor's own
negatives ``(N, k, d)`` are met by that anchor only, on its process, so they stay local.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from contrastkit import distributed as dist_utils


@dataclass(frozen=True)
class GlobalBatch:
    """Two views of a batch seen from one process.

    Attributes:
        u, v: this process's rows, ``(N, d)``; the anchors.
        u_all, v_all: every process's rows in rank order, ``(M, d)``; the candidates. They are
            ``u`` and ``v`` themselves outside torch.distributed.
        offset: the index of this process's first row in ``u_all`` / ``v_all``.
        negatives: ``None``, or the explicit negatives: each local anchor's own ``(N, k, d)``,
            or the pool of every process in rank order ``(M_all, d)``.
    """

    u: torch.Tensor
    v: torch.Tensor
    u_all: torch.Tensor
    v_all: torch.Tensor
    offset: int
    negatives: torch.Tensor | None = None

    @property
    def is_local(self) -> bool:
        """True when the candidates are the anchors themselves (a single process)."""
        return self.u_all is self.u

    def own_columns(self) -> torch.Tensor:
        """``(N,)`` column of each local row in the global candidates (``arange(N) + offset``)."""
        return torch.arange(self.u.shape[0], device=self.u.device) + self.offset

    def stacked(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Both views stacked: anchors ``[u; v]`` ``(2N, d)``, candidates ``[u_all; v_all]``
        ``(2M, d)`` (the anchors themselves when local), and each anchor's own column ``(2N,)``.
        """
        anchors = torch.cat([self.u, self.v])
        if self.is_local:  # each anchor's own column is its row
            return anchors, anchors, torch.arange(anchors.shape[0], device=anchors.device)
        own = self.own_columns()
        return (anchors, torch.cat([self.u_all, self.v_all]),
                torch.cat([own, own + self.u_all.shape[0]]))


def global_rows(x: torch.Tensor, distributed: bool) -> tuple[torch.Tensor, int]:
    """``x`` gathered over processes and this process's row offset, when ``distributed`` is
    true and torch.distributed is running; ``(x, 0)`` otherwise."""
    return dist_utils.gather_rows(x) if distributed else (x, 0)


def global_batch(u: torch.Tensor, v: torch.Tensor, distributed: bool,
                 negatives: torch.Tensor | None = None) -> GlobalBatch:
    """Gather the candidates, and a pool of ``negatives`` ``(M, d)``, when ``distributed`` is
    true and torch.distributed is running (every process must then hold as many negatives)."""
    u_all, offset = global_rows(u, distributed)
    v_all, _ = global_rows(v, distributed)
    if negatives is not None and negatives.dim() == 2 and distributed:
        negatives = dist_utils.gather_pool(negatives)
    return GlobalBatch(u, v, u_all, v_all, offset, negatives)
