"""Gradient caching with explicit negatives (``grad_cache(..., negatives=)``): the negatives'
inputs are embedded chunk by chunk like the second view and the encoder receives the gradient
of the whole batch's loss, on one process and under DDP (in test_grad_cache.py's two
processes)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from contrastkit import distributed, losses
from contrastkit.train.grad_cache import GatheredLoss, grad_cache

BATCH, IN_DIM, DIM, CHUNK, K, POOL = 8, 6, 4, 3, 2, 6
CRITERIA = {
    "info_nce": lambda **kw: losses.InfoNCE(0.3, **kw),
    "info_nce_one_way": lambda **kw: losses.InfoNCE(0.3, direction="one_way", **kw),
    "siglip": lambda **kw: losses.SigLIP(5.0, -2.0, **kw),
    "hucl": lambda **kw: losses.HUCL(estimator="importance", **kw),
}


def _encoder(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN_DIM, 8), nn.Tanh(), nn.Linear(8, DIM)).double()


def _inputs(form: str):
    """Two views ``(BATCH, IN_DIM)`` and the negatives' inputs: each row's own
    ``(BATCH, K, IN_DIM)`` or a pool ``(POOL, IN_DIM)``."""
    generator = torch.Generator().manual_seed(1)
    view1, view2 = torch.randn(2, BATCH, IN_DIM, generator=generator, dtype=torch.float64)
    shape = (BATCH, K, IN_DIM) if form == "own" else (POOL, IN_DIM)
    return view1, view2, torch.randn(shape, generator=generator, dtype=torch.float64)


def _plain(encoder, criterion, view1, view2, negatives):
    """The reference: every input embedded at once with a graph, one backward."""
    encoder.zero_grad()
    total = criterion.compute(encoder(view1), encoder(view2), None,
                              negatives=encoder(negatives)).total
    total.backward()
    return total.detach(), [p.grad.clone() for p in encoder.parameters()]


def _cached(encoder, criterion, view1, view2, negatives, chunk_size=CHUNK, **options):
    encoder.zero_grad()
    output = grad_cache(encoder, criterion, view1, view2, chunk_size, negatives=negatives,
                        **options)
    return output.total, [p.grad.clone() for p in encoder.parameters()]


def _assert_equal(expected, actual, tolerance=1e-12):
    for want, got in zip(expected, actual, strict=True):
        torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("form", ["own", "pool"])
@pytest.mark.parametrize("name", CRITERIA)
def test_the_encoder_gets_the_whole_batch_gradient_with_negatives(name, form):
    encoder, criterion = _encoder(), CRITERIA[name]()
    view1, view2, negatives = _inputs(form)
    loss, expected = _plain(encoder, criterion, view1, view2, negatives)
    cached_loss, actual = _cached(encoder, criterion, view1, view2, negatives)
    torch.testing.assert_close(cached_loss, loss, rtol=1e-12, atol=1e-12)
    _assert_equal(expected, actual)


class _TwoTowers(nn.Module):
    """Each view has its own tower: ``forward(x, tower=...)``."""

    def __init__(self):
        super().__init__()
        self.first, self.second = _encoder(0), _encoder(1)

    def forward(self, x, tower):
        return (self.first if tower == "first" else self.second)(x)


def test_the_negatives_take_the_second_views_tower():
    encoder, criterion = _TwoTowers(), losses.InfoNCE(0.3)
    view1, view2, negatives = _inputs("own")
    encoder.zero_grad()
    criterion(encoder.first(view1), encoder.second(view2),
              negatives=encoder.second(negatives)).backward()
    expected = [p.grad.clone() for p in encoder.parameters()]
    _, actual = _cached(encoder, criterion, view1, view2, negatives,
                        towers=("first", "second"))
    _assert_equal(expected, actual)


@pytest.mark.parametrize(("negatives", "message"), [
    (torch.zeros(BATCH - 1, K, IN_DIM, dtype=torch.float64), r"\(8, k, \.\.\.\)"),
    (torch.zeros(BATCH, 0, IN_DIM, dtype=torch.float64), "k >= 1"),
    (torch.zeros(0, IN_DIM, dtype=torch.float64), "M >= 1"),
    (torch.zeros(IN_DIM, dtype=torch.float64), "inputs like view2's"),
    ([0.0] * IN_DIM, "tensor of inputs"),
])
def test_bad_negatives_are_named(negatives, message):
    view1, view2, _ = _inputs("pool")
    with pytest.raises(ValueError, match=message):
        grad_cache(_encoder(), losses.InfoNCE(), view1, view2, CHUNK, negatives=negatives)


def test_a_criterion_without_negatives_refuses_them_before_any_gradient():
    encoder = _encoder()
    view1, view2, negatives = _inputs("pool")
    encoder.zero_grad(set_to_none=True)
    with pytest.raises(ValueError, match="negatives: the loss 'simclr'"):
        grad_cache(encoder, losses.SimCLR(), view1, view2, CHUNK, negatives=negatives)
    assert all(p.grad is None for p in encoder.parameters())


# ---- two processes (gloo), each with its half of the rows and of the negatives ---------------
# run inside the two processes of test_grad_cache.py (one spawn for both files)

DDP_CASES = {  # name: (criterion, form)
    "info_nce_pool": ("info_nce", "pool"),
    "info_nce_one_way_own": ("info_nce_one_way", "own"),
    "siglip_own": ("siglip", "own"),
    "hucl_pool": ("hucl", "pool"),  # no per-process share: through GatheredLoss
}


def ddp_negatives_case(rank: int, case: str):
    """On process ``rank`` of two: grad_cache of a DDP encoder on this process's half of the
    rows and of the negatives; the mean loss and the encoder's (averaged) gradients."""
    name, form = DDP_CASES[case]
    view1, view2, negatives = _inputs(form)
    half = len(negatives) // 2
    rows = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
    mine = negatives[rows] if form == "own" else negatives[rank * half:(rank + 1) * half]
    encoder = nn.parallel.DistributedDataParallel(_encoder())
    if losses.get(name.removesuffix("_one_way")).supports_distributed:
        criterion = CRITERIA[name](distributed=True)
    else:  # no per-process share: every process computes the global batch's loss
        criterion = GatheredLoss(CRITERIA[name]())
    output = grad_cache(encoder, criterion, view1[rows], view2[rows], 2, negatives=mine)
    return (distributed.all_reduce_mean(output.total),
            [p.grad.clone() for p in encoder.parameters()])


def assert_ddp_negatives_case(case: str, per_rank: list) -> None:
    """Each process's result of :func:`ddp_negatives_case` is one process's on all the rows."""
    name, form = DDP_CASES[case]
    view1, view2, negatives = _inputs(form)
    loss, expected = _plain(_encoder(), CRITERIA[name](), view1, view2, negatives)
    for total, gradients in per_rank:
        torch.testing.assert_close(total, loss, rtol=1e-12, atol=1e-12)
        _assert_equal(expected, gradients, 1e-10)
