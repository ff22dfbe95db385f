"""Losses with planted bugs for contrastkit.testing.check_loss, each one change away from
:class:`Correct`, an InfoNCE (``u -> v``) that computes each process's share under
``distributed=True`` (its rows as anchors against the gathered ``v``)."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from contrastkit import distributed, losses


class Correct(losses.ContrastiveLoss):
    """InfoNCE, plainly written; its share under torch.distributed is its anchors' mean."""

    supports_distributed = True
    supports_chunking = True

    def __init__(self, temperature: float = 0.5, distributed: bool = False,
                 chunk_size: int | None = None):
        super().__init__()
        self.temperature, self.distributed, self.chunk_size = temperature, distributed, chunk_size

    def forward(self, u, v, labels=None):
        if not (torch.isfinite(u).all() and torch.isfinite(v).all()):
            raise ValueError("u and v must be finite")
        return self.reduce(self.terms(F.normalize(u, dim=1), F.normalize(v, dim=1)))

    def terms(self, u, v):
        """Each anchor's cross-entropy against the candidates."""
        candidates, offset = self.candidates(v)
        wide = torch.promote_types(u.dtype, torch.float32)  # bfloat16 reduced in float32
        logits = u.to(wide) @ candidates.to(wide).T / self.temperature
        targets = torch.arange(len(u)) + offset
        return F.cross_entropy(logits, targets, reduction="none")

    def candidates(self, v):
        """The candidates (every process's ``v``) and the index of this process's first row."""
        return distributed.gather_rows(v) if self.distributed else (v, 0)

    def reduce(self, terms):
        """The mean over this process's anchors (``chunk_size`` changes nothing here)."""
        return terms.mean()


def correct_at_temperature_0_3(**options) -> Correct:
    """A factory (at a module's top level: processes spawned on a CUDA machine unpickle it)
    that sets one setting and takes the options the check passes."""
    return Correct(temperature=0.3, **options)


class GatherWithoutGradient(Correct):
    """Bug: the gathered candidates carry no gradient back to the processes that made them
    (only this process's own rows keep theirs)."""

    def candidates(self, v):
        if not self.distributed:
            return v, 0
        gathered = [torch.empty_like(v) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, v.detach())
        gathered[dist.get_rank()] = v
        return torch.cat(gathered), dist.get_rank() * len(v)


class MissingOneOverWorldSize(Correct):
    """Bug: the mean of the gathered anchors' terms divides by the local batch size, not by
    the global one (``world_size`` times larger)."""

    def reduce(self, terms):
        return distributed.gather(terms).sum() / len(terms)


class ChunkMeans(Correct):
    """Bug: ``chunk_size=`` averages the chunks' means, wrong when the last chunk is short."""

    def reduce(self, terms):
        if self.chunk_size is None:
            return terms.mean()
        return torch.stack([chunk.mean() for chunk in terms.split(self.chunk_size)]).mean()


class DetachedCandidates(Correct):
    """Bug: no gradient reaches ``v`` through the candidates (gradcheck fails)."""

    def candidates(self, v):
        return v.detach(), 0


class NoFiniteCheck(Correct):
    """Bug: a NaN input returns NaN, silently."""

    def forward(self, u, v, labels=None):
        return self.reduce(self.terms(F.normalize(u, dim=1), F.normalize(v, dim=1)))


class UnstableLogSumExp(Correct):
    """Bug: the log-sum-exp is computed without subtracting the row maximum, in the input's
    dtype: at a low temperature ``exp`` overflows in bfloat16 (not in float64)."""

    def terms(self, u, v):
        candidates, offset = self.candidates(v)
        logits = u @ candidates.T / self.temperature
        targets = torch.arange(len(u)) + offset
        return logits.exp().sum(dim=1).log() - logits[torch.arange(len(u)), targets]


class RaisesOnOneProcess(Correct):
    """Bug: process 1 raises while process 0 waits for it in the gather."""

    def candidates(self, v):
        if self.distributed and dist.get_rank() == 1:
            raise ValueError("planted error on process 1")
        return super().candidates(v)
