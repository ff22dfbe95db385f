"""Drawing each positive pair's negatives from its anchor's hard-negative law, without a
``(pairs, B)`` matrix: one inverse CDF per anchor (:func:`sample_from_rows`)."""

from __future__ import annotations

import torch

# Draws per chunk of the sampler on the CPU, where a chunk's temporaries then stay in the cache:
# at B = 512, k = 256 (26 000 pairs, 1 thread) 1.3x to 2.3x faster than one pass over all.
SAMPLE_CHUNK_DRAWS = 1 << 18


def sample_from_rows(log_weights: torch.Tensor, row_index: torch.Tensor, k: int,
                     generator: torch.Generator) -> torch.Tensor:
    r"""``k`` draws for each entry of ``row_index``, i.i.d. with replacement from the law
    ``exp(log_weights[r])`` of its row ``r``: the resampling of the hard-negative paper (Jiang,
    Nguyen, Aeron, Ishwar, "Hard-Negative Sampling for Contrastive Learning: Optimal
    Representation Geometry and Neural- vs Dimensional-Collapse", arXiv:2311.05139, 2023),
    where row ``i`` is the law ``q_i(j) ∝ eta_1(z_i^T v_j)`` over anchor ``i``'s candidates
    ``j`` (0 off them) and each positive pair ``(i, p)`` draws its ``k`` negatives from it.

    Inverse CDF, built once per *row* (not per pair: no ``(pairs, B)`` matrix is formed). Each
    row's cumulative sum is taken in float64 and divided by its last entry, which makes that
    entry exactly 1; a uniform ``u`` in ``[0, 1)`` (one per draw, from ``generator``) picks
    the first candidate ``j`` with ``cdf_j > u``. That candidate has ``cdf_j > cdf_{j-1}``, so
    a candidate of probability 0 (off the anchor's candidates, or weight 0) is never drawn,
    and ``u < 1`` never maps past the row's last candidate of positive probability. The
    search is a guide table (Chen and Asau, 1974): the row's ``[0, 1)`` is cut into ``M``
    equal buckets (a power of two, from the smallest one >= the row length up to 4 per
    candidate while the table stays under half the draws); a bucket holding at most one
    ``cdf_j`` answers with one comparison, and the few draws in a bucket holding more take a
    binary search in it (``torch.searchsorted`` on every draw was as slow on the CPU as
    ``torch.multinomial``: about 75 ns a draw at B = 512). The CDF and the uniforms are in
    the weights' precision (float32: each probability realized to within 2^-24, as with the
    float32 CDF of ``torch.multinomial``; float64: 2^-53). The draws use ``generator`` only
    (never the global RNG); they differ from those of the ``torch.multinomial`` on a
    ``(pairs, B)`` matrix that this replaces: the same seed gives other negatives than
    before.

    Args:
        log_weights: ``(rows, n)`` log-probabilities, ``-inf`` off the support (detached
            here); every row needs a positive total weight.
        row_index: 1-D integer tensor of the rows to draw from (one entry per pair).
        k: draws per entry.
        generator: the ``torch.Generator`` on ``log_weights``' device.

    Returns:
        ``(len(row_index), k)`` candidate indices (int32 where the tables allow, else int64).
    """
    table = _InverseCdfTable(log_weights.detach(), draws=row_index.numel() * k)
    drawn = torch.empty((row_index.numel(), k), dtype=table.index_dtype,
                        device=log_weights.device)
    chunk = row_index.numel()
    if log_weights.device.type == "cpu":
        chunk = max(1, SAMPLE_CHUNK_DRAWS // k)
    for start in range(0, row_index.numel(), chunk):
        table.draw_into(drawn[start:start + chunk], row_index[start:start + chunk], generator)
    return drawn


class _InverseCdfTable:
    """The rows' CDFs and their guide tables (see :func:`sample_from_rows`)."""

    def __init__(self, log_weights: torch.Tensor, draws: int):
        rows, width = log_weights.shape
        dtype = torch.promote_types(log_weights.dtype, torch.float32)
        cdf = log_weights.to(torch.float64).exp().cumsum(dim=1)
        # x / x == 1 exactly; rounding to float32 keeps the order, the ties and the last 1
        cdf = (cdf / cdf[:, -1:]).to(dtype)
        buckets = 1 << max(width - 1, 0).bit_length()
        while buckets < 4 * width and 2 * rows * buckets <= draws:
            buckets *= 2
        self.index_dtype = (torch.int32 if rows * max(buckets + 1, width) < 2**31
                            else torch.int64)
        # bucket of each cdf_j, floor(cdf_j * M): exact, M being a power of two; M for the 1s
        bucket_of = (cdf * buckets).to(torch.int64)
        counts = torch.zeros(rows, buckets + 1, dtype=self.index_dtype, device=cdf.device)
        counts.scatter_add_(1, bucket_of, torch.ones_like(bucket_of, dtype=self.index_dtype))
        first = counts.cumsum(dim=1, dtype=self.index_dtype) - counts
        counts, first = counts[:, :buckets], first[:, :buckets]
        # a u in bucket m lies in [m, m + 1) / M: every cdf_j of an earlier bucket is <= u and
        # every cdf_j of a later one > u, so the answer lies in [first, first + count]; the
        # last cdf_j (1) is in bucket M, hence first <= width - 1
        self.first = first.reshape(-1)
        self.count = counts.reshape(-1)
        self.threshold = cdf.gather(1, first.to(torch.int64)).reshape(-1)  # cdf_first
        self.crowded = (counts >= 2).reshape(-1)  # one comparison is not enough
        self.search_steps = int(counts.max()).bit_length()
        self.cdf = cdf.reshape(-1)
        self.buckets, self.width = buckets, width

    def draw_into(self, out: torch.Tensor, row_index: torch.Tensor,
                  generator: torch.Generator) -> None:
        """Fill ``out`` (``(len(row_index), k)``, contiguous) with draws from the rows."""
        u = torch.rand(out.shape, dtype=self.cdf.dtype, device=out.device, generator=generator)
        bucket = (u * self.buckets).to(self.index_dtype)  # u * M is exact, M a power of 2
        bucket += (row_index.to(self.index_dtype) * self.buckets).unsqueeze(1)
        bucket, u, drawn = bucket.view(-1), u.view(-1), out.view(-1)
        torch.index_select(self.first, 0, bucket, out=drawn)
        drawn += u >= self.threshold.index_select(0, bucket)
        crowded = self.crowded.index_select(0, bucket).nonzero().squeeze(1)
        if crowded.numel() == 0:
            return
        # binary search for the first cdf_j > u in [low, high] (cdf_high > u)
        bucket, u = bucket.index_select(0, crowded), u.index_select(0, crowded)
        low = drawn.index_select(0, crowded)
        high = self.first.index_select(0, bucket) + self.count.index_select(0, bucket)
        row_start = torch.div(bucket, self.buckets, rounding_mode="floor") * self.width
        for _ in range(self.search_steps):
            middle = (low + high) >> 1
            right = self.cdf.index_select(0, row_start + middle) <= u
            low = torch.where(right, middle + 1, low)
            high = torch.where(right, high, middle)
        drawn.index_copy_(0, crowded, low)
