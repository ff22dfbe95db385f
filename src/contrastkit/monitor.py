"""A similarity monitor for any training loop: the statistics of the central paper, streamed.

Fed the two views' embeddings at each step, :class:`SimilarityMonitor` keeps the exact
statistics of the in-batch pairs the loss sees (Lee, Lim, Lee, Sohn, "On the Similarities of
Embeddings in Contrastive Learning", ICML 2025, arXiv:2506.09781, Def. 4.1: positive pairs
``u_i . v_i``, cross-view negatives ``u_i . v_j`` and within-view negatives ``u_i . u_j``,
``v_i . v_j``, ``i != j``) pooled over the steps of a logging window, with alignment,
uniformity (Wang & Isola) and the effective rank of the embeddings (Roy & Vetterli), beside the
theory's reference values. It never stores embeddings: a window costs ``O(d^2)`` memory (the
second-moment matrix of the rows) and a step ``O(B d^2 + B^2 d)`` time.

Plain PyTorch::

    monitor = SimilarityMonitor(n=len(dataset), log_every=50)
    for step, (x1, x2) in enumerate(loader):
        u, v = model(x1), model(x2)
        loss = criterion(u, v)
        ...
        if (stats := monitor.update(u, v)) is not None:
            print(step, stats["window_negative_var"], stats["theory_negative_var_high"])
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass

import torch

from contrastkit.checks.scalars import check_count, check_positive
from contrastkit.checks.tensors import check_labels, check_view_shapes
from contrastkit.geometry import SimilarityAccumulator
from contrastkit.geometry._moments import StreamingMoments
from contrastkit.geometry._pairs import PairSums, device_sums, with_host_values
from contrastkit.geometry.false_negatives import (
    FalseNegativeTally,
    band_high,
    count_false_negatives,
)
from contrastkit.rows import unit_rows
from contrastkit.theory import minibatch_variance_bounds, negative_similarity_band

__all__ = ["SimilarityMonitor"]

PAIR_KINDS = ("positive", "negative", "within")
#: The constructor's arguments: what :meth:`SimilarityMonitor.state_dict` leaves out.
SETTINGS = ("n", "log_every", "uniformity_t", "collapse_rank", "collapse_similarity",
            "separation_margin", "split_classes")
STATE_FORMAT = 1
#: With labels, the negative pairs are also split by class (the paper's Appendix F).
CLASS_KINDS = ("negative_same_class", "negative_different_class")


class _Pooled:
    """Count, sum and sum of squares of one kind of pair over a window's batches, so that the
    window's mean and (population) variance are those of all its pairs together."""

    def __init__(self) -> None:
        self.count, self.total, self.squares = 0, 0.0, 0.0
        self.last: tuple[float, float] | None = None  # the mean and variance added last

    def add(self, count: int, mean: float, var: float) -> None:
        self.last = (mean, var)
        self.count += count
        self.total += count * mean
        self.squares += count * (var + mean * mean)

    def mean_var(self) -> tuple[float, float]:
        mean = self.total / self.count
        return mean, max(self.squares / self.count - mean * mean, 0.0)


@dataclass
class PreparedBatch:
    """A batch's statistics computed on its device by :meth:`SimilarityMonitor.prepare`, not
    yet read: its moments, its pair sums (``kinds``: some 0-d tensors), and ``numbers``, the
    float64 vector whose host copy :meth:`SimilarityMonitor.add_prepared` needs (whether the
    batch is finite, the two views' summed uniformity, the tensors of ``kinds``, then the
    false-negative counts named by ``false_negatives``)."""

    batch: StreamingMoments
    kinds: dict[str, PairSums]
    numbers: torch.Tensor
    rows: int
    false_negatives: tuple[str, ...] = ()


class SimilarityMonitor:
    """Streaming similarity statistics of a training run, returned every ``log_every`` steps.

    Args:
        n: the dataset size. With it, each result also holds the full-batch optimum's negative
            mean ``-1/(n-1)`` (Theorem 5.1) and Theorem 5.5's range of the negative-pair
            variance at a fixed mini-batch optimum for the current batch size (eq. 11), and
            the monitor can warn of excessive separation.
        log_every: steps per window: :meth:`update` returns the window's statistics at every
            ``log_every``-th step (``None`` otherwise) and starts a new window.
        uniformity_t: ``t`` of the uniformity ``log E exp(-t ||x_i - x_j||^2)`` (2, as Wang &
            Isola), averaged over the two views and the window's steps.
        collapse_rank, collapse_similarity: collapse is warned of when the window's effective
            rank is below ``collapse_rank`` or its negative-pair mean above
            ``collapse_similarity``.
        separation_margin: excessive separation (Theorem 5.3) is warned of when the negative
            mean over all pairs of the window (``window_negative_mean``) is below ``-1/(n-1) -
            separation_margin`` while the positive mean is below ``1 - separation_margin``
            (needs ``n``).
        split_classes: whether labels also split the negatives' mean and variance by class
            (per-class moments: ``O(C d^2)`` per batch, and on a GPU a read of the batch's
            classes, a wait); ``False``: labels only count the same-class false negatives.

    Each result also holds the false-negative statistics of its batches
    (:mod:`contrastkit.geometry.false_negatives`: the negatives at or above their anchor's
    positive, and above the theory's band for ``n`` and the batch size; with labels or
    duplicate ids, how many of those are same-class or duplicate pairs).

    Each warning (``RuntimeWarning``: ``collapse``, ``excessive_separation``, ``non_finite``)
    is given once; :attr:`alerts` maps each one given to its message. A batch with a non-finite
    embedding is left out of the statistics. :attr:`last_batch` holds the mean and variance of
    each kind of pair of the batch added last (``None`` after a non-finite one), and
    :meth:`state_dict` / :meth:`load_state_dict` carry the monitor's progress (step, alerts,
    current window) over a checkpoint.

    Example:
        >>> import torch
        >>> monitor = SimilarityMonitor(n=1000, log_every=2)
        >>> generator = torch.Generator().manual_seed(0)
        >>> for _ in range(2):
        ...     u = torch.randn(64, 16, generator=generator)
        ...     stats = monitor.update(u, u + 0.1 * torch.randn(64, 16, generator=generator))
        >>> stats["positive_mean"] > 0.95, stats["steps"], round(stats["theory_negative_mean"], 4)
        (True, 2.0, -0.001)
    """

    def __init__(self, n: int | None = None, log_every: int = 50, *, uniformity_t: float = 2.0,
                 collapse_rank: float = 1.5, collapse_similarity: float = 0.9,
                 separation_margin: float = 0.01, split_classes: bool = True) -> None:
        self.n = None if n is None else check_count("n", n, 2)
        self.log_every = check_count("log_every", log_every, 1)
        self.uniformity_t = check_positive("uniformity_t", uniformity_t)
        self.collapse_rank = check_positive("collapse_rank", collapse_rank)
        self.collapse_similarity = check_positive("collapse_similarity", collapse_similarity)
        self.separation_margin = check_positive("separation_margin", separation_margin)
        if not isinstance(split_classes, bool):
            raise ValueError(f"split_classes must be True or False, got {split_classes!r}")
        self.split_classes = split_classes
        self.alerts: dict[str, str] = {}
        self.step = 0
        self.last_batch: dict[str, float] | None = None
        self._reset()

    def _reset(self) -> None:
        self._pooled = {kind: _Pooled() for kind in (*PAIR_KINDS, *CLASS_KINDS)}
        self._false_negatives = FalseNegativeTally()
        self._all_pairs = SimilarityAccumulator()
        self._uniformity = 0.0
        self._second_moment: torch.Tensor | None = None
        self._steps = 0
        self._rows = 0
        self._batch_size = 0

    def update(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
               duplicates: torch.Tensor | None = None) -> dict[str, float] | None:
        """Add one step's two views (``(B, d)`` each, row ``i`` the positive pair ``i``: the
        anchors and their positives; rows are L2-normalized here, gradients are not tracked)
        and optionally their class ``labels`` ``(B,)`` and ``duplicates`` ``(B,)`` (ids: rows
        with one id are duplicates, e.g. of one positive text); at every ``log_every``-th
        step, the window's statistics (:meth:`compute`), after which a new window starts. A
        batch refused with a ``ValueError`` (views of different shapes, a dimension other than
        the window's earlier batches', bad labels or duplicates) leaves the monitor as it was:
        it is checked before anything changes. On a GPU the call waits for the device once
        (:meth:`prepare` and :meth:`add_prepared` split it, for a loop that reads other values
        in that wait)."""
        prepared = self.prepare(u, v, labels, duplicates)
        return self.add_prepared(prepared, prepared.numbers.tolist())

    @torch.no_grad()
    def prepare(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
                duplicates: torch.Tensor | None = None) -> PreparedBatch:
        """The first half of :meth:`update`: check the batch and compute its statistics on its
        device, without waiting for it; the monitor is unchanged until :meth:`add_prepared`
        is given the batch with the host copy of its ``numbers``."""
        check_view_shapes(u, v)
        if labels is not None:
            labels = check_labels(labels, u.shape[0], device=u.device)
        if duplicates is not None:
            duplicates = check_labels(duplicates, u.shape[0], "duplicates", u.device)
        if self._second_moment is not None and u.shape[1] != self._second_moment.shape[0]:
            raise ValueError(f"u has dim {u.shape[1]}, but this window's earlier batches have "
                             f"dim {self._second_moment.shape[0]}: a monitor's window watches "
                             "one embedding")
        if self._second_moment is not None and u.device != self._second_moment.device:
            raise ValueError(f"u is on {u.device}, but this window's earlier batches were on "
                             f"{self._second_moment.device}")
        finite = torch.isfinite(u).all() & torch.isfinite(v).all()
        u, v = _float64_unit_rows(u.detach()), _float64_unit_rows(v.detach())
        split = labels is not None and self.split_classes
        batch = StreamingMoments(num_views=2, labelled=split)
        batch.update((u, v), labels if split else None)
        kinds = batch.kinds(host=False)
        uniformity = _uniformity(u, self.uniformity_t) + _uniformity(v, self.uniformity_t)
        counts = count_false_negatives(u, v, band_high(self.n, u.shape[0]), labels, duplicates)
        numbers = torch.stack([finite.to(torch.float64), uniformity, *device_sums(kinds),
                               *counts.values()])
        return PreparedBatch(batch, kinds, numbers, u.shape[0], tuple(counts))

    def add_prepared(self, prepared: PreparedBatch, numbers: list[float]
                     ) -> dict[str, float] | None:
        """The second half of :meth:`update`: add the batch of :meth:`prepare`, given
        ``numbers``, the host copy of its ``numbers`` (a batch with a non-finite embedding is
        left out of the statistics); the window's statistics at every ``log_every``-th step."""
        self.step += 1
        self.last_batch = None
        finite, uniformity, *sums = numbers
        counted = len(sums) - len(prepared.false_negatives)
        if finite:
            for pooled in self._pooled.values():
                pooled.last = None
            self._false_negatives.add(dict(zip(prepared.false_negatives, sums[counted:],
                                               strict=True)), prepared.rows * (prepared.rows - 1))
            self._add(prepared, with_host_values(prepared.kinds, sums[:counted]), uniformity / 2)
            self.last_batch = self._last_batch()
        else:
            self._alert("non_finite", f"a non-finite embedding at step {self.step}: the batch "
                                      "is left out of the similarity statistics")
        if self.step % self.log_every:
            return None
        result = self.compute() if self._steps else None
        self._reset()
        return result

    def _add(self, prepared: PreparedBatch, kinds: dict[str, PairSums],
             uniformity: float) -> None:
        """Add a finite, checked batch to the window. Its two views were normalized once, in
        float64; their Gram matrices ``U^T U``, ``V^T V`` give the batch's pair statistics
        (``kinds``, as ``similarity_stats(method="moments")``), the window's across all its
        rows (as a ``SimilarityAccumulator`` fed every batch) and its second moment, and each
        view's ``B x B`` Gram matrix its ``uniformity`` (the two views' mean)."""
        for kind, sums in kinds.items():
            mean, var = sums.mean(), sums.var()  # None for no pair
            if kind in self._pooled and mean is not None and var is not None:
                self._pooled[kind].add(sums.count, mean, var)
        batch = prepared.batch
        self._all_pairs.add_moments(batch)
        self._uniformity += uniformity
        first, second = batch.views()
        moment = first.gram + second.gram
        self._second_moment = moment if self._second_moment is None else (
            self._second_moment + moment)
        self._steps += 1
        self._rows += prepared.rows
        self._batch_size = prepared.rows

    def _last_batch(self) -> dict[str, float]:
        """``<kind>_mean`` and ``<kind>_var`` of each kind of pair of the batch just added,
        and its false-negative counts and shares."""
        return {**{f"{kind}_{name}": value for kind, pooled in self._pooled.items()
                   if pooled.last is not None
                   for name, value in zip(("mean", "var"), pooled.last, strict=True)},
                **(self._false_negatives.last or {})}

    def state_dict(self) -> dict:
        """The monitor's progress, everything but its settings: the step count, the alerts
        given, the last batch's statistics and the current window's running sums, serialized
        (``{"format": 1, "progress": bytes}``, for a checkpoint). :meth:`load_state_dict`
        continues from it as if the monitor had not stopped: no step of the window is lost or
        counted twice."""
        progress = {name: value for name, value in vars(self).items() if name not in SETTINGS}
        buffer = io.BytesIO()
        torch.save(progress, buffer)
        return {"format": STATE_FORMAT, "progress": buffer.getvalue()}

    def load_state_dict(self, state: dict,
                        map_location: torch.device | str | dict[str, str] | None = None) -> None:
        """Continue from a :meth:`state_dict` (of a monitor with any settings: this one's are
        kept). ``map_location`` (as :func:`torch.load`'s) moves the window's tensors, e.g. to
        the device of the embeddings to come. Raises ``ValueError`` for a state this version
        cannot read."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"state must be a SimilarityMonitor.state_dict() (format "
                             f"{STATE_FORMAT}), got {found!r}")
        try:
            progress = torch.load(io.BytesIO(state["progress"]), map_location=map_location,
                                  weights_only=False)
        except Exception as error:  # torch raises several types for unreadable bytes
            raise ValueError(f"state's progress cannot be read ({type(error).__name__}: "
                             f"{error})") from error
        expected = {name for name in vars(self) if name not in SETTINGS}
        if set(progress) != expected:
            raise ValueError(f"state's progress holds {sorted(progress)}, expected "
                             f"{sorted(expected)}: it is from another version of contrastkit")
        vars(self).update(progress)

    def compute(self) -> dict[str, float]:
        """The statistics of the current window: ``<kind>_mean`` and ``<kind>_var`` for the
        positive, negative (cross-view) and within-view pairs of all its batches (and, where
        labels were given, for the same-class and different-class negatives);
        ``window_negative_mean`` / ``_var`` over all cross-view pairs of the window's rows,
        across batches too (an estimate of the dataset's, which Theorems 5.1, 5.3 and 5.5 are
        about: compare these, not the in-batch ones, with the theory's values; the in-batch
        mean is pulled towards ``-1/(B-1)``, and the in-batch variance at a mini-batch optimum
        is 0); ``alignment``
        (``E ||u_i - v_i||^2 = 2 - 2 positive_mean``), ``uniformity``, ``effective_rank`` of
        all its rows (both views), ``steps``; the false-negative counts and shares of all its
        batches (:mod:`contrastkit.geometry.false_negatives`); with ``n``,
        ``theory_negative_mean``, and ``theory_negative_var_low`` / ``_high`` and the band's
        edges ``theory_negative_band_low`` / ``_high`` for the last batch size. Warns as the
        class says."""
        if not self._steps:
            raise ValueError("compute() needs at least one finite batch added with update() "
                             "since the window began")
        result: dict[str, float] = {}
        for kind in (*PAIR_KINDS, *CLASS_KINDS):
            if self._pooled[kind].count:
                result[f"{kind}_mean"], result[f"{kind}_var"] = self._pooled[kind].mean_var()
        if self._rows > 1:  # one row has no negative pair
            across = self._all_pairs.compute()
            result["window_negative_mean"] = across.negative_mean
            result["window_negative_var"] = across.negative_var
        result["alignment"] = 2 - 2 * result["positive_mean"]
        result["uniformity"] = self._uniformity / self._steps
        assert self._second_moment is not None  # added with the window's first batch
        result["effective_rank"] = _effective_rank(self._second_moment)
        result["steps"] = float(self._steps)
        if self.n is not None:
            result["theory_negative_mean"] = -1 / (self.n - 1)
            if 2 <= self._batch_size <= self.n:
                bounds = minibatch_variance_bounds(self.n, self._batch_size)
                result["theory_negative_var_low"] = bounds.low
                result["theory_negative_var_high"] = bounds.high
                band = negative_similarity_band(self.n, self._batch_size)
                result["theory_negative_band_low"], result["theory_negative_band_high"] = band
        result.update(self._false_negatives.result())
        self._warn(result)
        return result

    def _warn(self, result: dict[str, float]) -> None:
        if (result["effective_rank"] < self.collapse_rank
                or result["negative_mean"] > self.collapse_similarity):
            self._alert("collapse", f"the embeddings look collapsed at step {self.step}: "
                        f"effective rank {result['effective_rank']:.3g}, negative-pair mean "
                        f"{result['negative_mean']:.3g}")
        if self.n is not None and "window_negative_mean" in result:
            floor = -1 / (self.n - 1)
            if (result["window_negative_mean"] < floor - self.separation_margin
                    and result["positive_mean"] < 1 - self.separation_margin):
                self._alert("excessive_separation", f"excessive separation at step "
                            f"{self.step}: the negative-pair mean over the window "
                            f"{result['window_negative_mean']:.4g} is below -1/(n-1) = "
                            f"{floor:.4g} while the positive mean is "
                            f"{result['positive_mean']:.4g} < 1 (Theorem 5.3 of Lee et al., "
                            "ICML 2025)")

    def _alert(self, name: str, message: str) -> None:
        """Warn with ``message`` the first time ``name`` happens."""
        if name not in self.alerts:
            self.alerts[name] = message
            warnings.warn(f"SimilarityMonitor: {message}", RuntimeWarning, stacklevel=3)


def _float64_unit_rows(x: torch.Tensor) -> torch.Tensor:
    """The rows of ``x`` as float64 unit vectors, as :func:`~contrastkit.rows.unit_rows` makes
    them, without its range check (a host synchronization) where the check cannot fail: the
    squares of float32 or narrower entries neither overflow nor underflow in float64, so
    every nonzero finite row takes its plain path ``x / ||x||``. A zero row stays zero."""
    if x.dtype == torch.float64:
        return unit_rows(x)
    wide = x.to(torch.float64)
    norms = torch.linalg.vector_norm(wide, dim=-1, keepdim=True)
    return torch.where(norms > 0, wide / norms, wide)


def _uniformity(rows: torch.Tensor, t: float) -> torch.Tensor:
    """``geometry.uniformity(rows, t)`` of unit rows (float64, ``B >= 2``) from one ``B x B``
    Gram matrix: the mean of ``exp(-t ||x_i - x_j||^2)`` over the pairs ``i < j`` is that over
    the ordered pairs ``i != j``, so the log-sum-exp runs over the whole matrix, its diagonal
    masked (a 0-d tensor: the caller copies both views' values to the host at once)."""
    squared = rows.square().sum(dim=1)
    distances = (squared[:, None] + squared[None, :] - 2 * (rows @ rows.T)).clamp_min(0)
    exponents = (-t * distances).fill_diagonal_(-math.inf)
    batch = rows.shape[0]
    return torch.logsumexp(exponents.reshape(-1), dim=0) - math.log(batch * (batch - 1))


def _effective_rank(second_moment: torch.Tensor) -> float:
    """The effective rank (``exp`` of the entropy of the normalized singular values) of the
    rows whose second-moment matrix ``Z^T Z`` is given: the singular values of ``Z`` are the
    square roots of its eigenvalues."""
    eigenvalues = torch.linalg.eigvalsh(second_moment).clamp_min(0)
    # eigenvalues below 1e-14 of the largest are rounding (about 1e-16 of it, per dimension)
    singular = eigenvalues[eigenvalues > eigenvalues.max() * 1e-14].sqrt()
    p = singular / singular.sum()
    return math.exp(float(-(p * p.log()).sum()))
