"""Two CPU processes (gloo) compute the same loss and gradients as one process on the
concatenated batch (contrastkit.distributed + ``distributed=True`` on the losses).

Each process embeds its slice of a seeded batch with a shared linear layer, computes its share
of the loss with ``distributed=True`` and backpropagates; averaging the layer's gradient over the
processes (what DDP does) must give the single-process gradient, and the mean of the shares must
give the single-process loss.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit import distributed, losses
from contrastkit.losses.kernels import common
from tests.ports import free_port

WORLD, ROWS, IN_DIM, DIM = 2, 5, 6, 4
# How each process computes its share: unchunked (these small matrices take the kernels'
# plain-autograd path), chunked, and unchunked through the hand-written kernels
PATHS = (None, 2, "kernel")

# Class labels of the global batch, for the supervised losses. Classes 2 and 3 live on one
# process each, class 1 has one row on each (its positives are only reachable through the
# gather), classes 0, 4 and 5 have one row (no positive in a single view), so the processes
# have different numbers of anchors with a positive (3 and 4 in a single view).
LABELS = torch.tensor([0, 1, 2, 2, 5, 1, 3, 3, 3, 4])
# In a single view no row of process 0 has a positive: its share is 0, yet its rows are
# negatives of process 1's anchors and must receive their gradient.
ONE_SIDED_LABELS = torch.tensor([10, 11, 12, 13, 14, 1, 1, 2, 2, 3])

LOSSES = {
    "simclr": lambda u, v, labels, **kw: losses.simclr(u, v, temperature=0.3, **kw),
    "info_nce": lambda u, v, labels, **kw: losses.info_nce(u, v, temperature=0.3, **kw),
    "dcl": lambda u, v, labels, **kw: losses.dcl(u, v, temperature=0.3, **kw),
    "dhel": lambda u, v, labels, **kw: losses.dhel(u, v, temperature=0.3, **kw),
    "siglip": lambda u, v, labels, **kw: losses.siglip(u, v, scale=7.0, bias=-3.0, **kw),
    "vrns": lambda u, v, labels, **kw: losses.vrns(u, v, n=50, **kw),
    "vrns_within": lambda u, v, labels, **kw: losses.vrns(u, v, n=50, within_view=True, **kw),
    "supcon": lambda u, v, labels, **kw: losses.supcon(u, v, labels, temperature=0.3, **kw),
    # one view: the sum of the two embeddings, so that both inputs receive gradients
    "supcon_single_view": lambda u, v, labels, **kw: losses.supcon(
        u + v, None, labels, temperature=0.3, **kw
    ),
}
LOSSES["supcon_single_view_one_sided"] = LOSSES["supcon_single_view"]


def _own(u, v):
    """Each row's own two explicit negatives, functions of its row only: each process's rows
    carry theirs, as one process's rows do."""
    return torch.stack([u + v, u - 2 * v], dim=1)


def _pool(u, v):
    """A pool of explicit negatives, one per row: the processes' pools, gathered in rank order,
    are one process's pool."""
    return 0.5 * (u - v)


# explicit negatives (losses.explicit_negatives): a pool is gathered like the batch
for _form, _negatives in (("own", _own), ("pool", _pool)):
    LOSSES[f"info_nce_{_form}"] = lambda u, v, labels, n=_negatives, **kw: losses.info_nce(
        u, v, temperature=0.3, negatives=n(u, v), **kw)
    LOSSES[f"info_nce_one_way_{_form}"] = lambda u, v, labels, n=_negatives, **kw: (
        losses.info_nce(u, v, temperature=0.3, negatives=n(u, v), direction="one_way", **kw))
    LOSSES[f"siglip_{_form}"] = lambda u, v, labels, n=_negatives, **kw: losses.siglip(
        u, v, scale=7.0, bias=-3.0, negatives=n(u, v), **kw)


def _composite(u, v, labels, **kw):
    """A composed objective: its terms share one gather of each view (losses.views)."""
    composite = (losses.SimCLR(0.3, **kw) + 30 * losses.VRNS(n=50, **kw)
                 + losses.SigLIP(7.0, -3.0, **kw) + 0.5 * losses.SupCon(0.3, **kw))
    return composite(u, v, labels)


LOSSES["composite"] = _composite


def _labels(name):
    return ONE_SIDED_LABELS if name.endswith("one_sided") else LABELS


def _problem():
    """The global batch (two views of inputs) and the shared layer's initial weight."""
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, WORLD * ROWS, IN_DIM, generator=generator, dtype=torch.float64)
    weight = torch.randn(DIM, IN_DIM, generator=generator, dtype=torch.float64)
    return x, y, weight


def _loss_and_grads(name, x, y, weight, labels, chunk_size=None, distributed_=False):
    weight = weight.clone().requires_grad_()
    x, y = x.clone().requires_grad_(), y.clone().requires_grad_()
    value = LOSSES[name](
        x @ weight.T, y @ weight.T, labels, chunk_size=chunk_size, distributed=distributed_
    )
    value.backward()
    return value.detach(), weight.grad, x.grad, y.grad


def _supcon_errors(x, rows):
    """The no-positive errors of a distributed single-view SupCon, as each process sees them."""
    errors = {}
    # only process 1 has an anchor without a positive (label 9); process 0 must raise too
    one_missing = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 3, 9])[rows]
    all_distinct = torch.arange(WORLD * ROWS)[rows]
    cases = {"raise": (one_missing, "raise"), "none": (all_distinct, "exclude")}
    for case, (labels, policy) in cases.items():
        try:
            losses.supcon(x, None, labels, no_positive=policy, distributed=True)
            errors[case] = None
        except ValueError as error:
            errors[case] = str(error)
    return errors


def _worker(rank, port, results):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        x, y, weight = _problem()
        rows = slice(rank * ROWS, (rank + 1) * ROWS)
        threshold = common.PLAIN_AUTOGRAD_ENTRIES
        out = {}
        for name in LOSSES:
            for path in PATHS:
                common.PLAIN_AUTOGRAD_ENTRIES = 0 if path == "kernel" else threshold
                value, w_grad, x_grad, y_grad = _loss_and_grads(
                    name, x[rows], y[rows], weight, _labels(name)[rows],
                    None if path == "kernel" else path, distributed_=True,
                )
                w_grad = distributed.all_reduce_mean(w_grad)  # what DDP does
                out[name, path] = (
                    distributed.all_reduce_mean(value), w_grad, x_grad, y_grad
                )
        common.PLAIN_AUTOGRAD_ENTRIES = threshold
        # integer tensors (class labels, for supervised losses) gather too, in rank order
        labels, offset = distributed.gather_rows(torch.arange(ROWS) + rank * ROWS)
        out["labels"] = (labels, offset)
        # unequal batches across processes are refused on every process, not hung
        try:
            losses.simclr(x[: ROWS - rank], y[: ROWS - rank], distributed=True)
            out["unequal"] = None
        except ValueError as error:
            out["unequal"] = str(error)
        try:  # so are pools of explicit negatives of unequal sizes
            losses.info_nce(x[rows], y[rows], negatives=x[: 2 + rank], distributed=True)
            out["unequal_pool"] = None
        except ValueError as error:
            out["unequal_pool"] = str(error)
        out["supcon_errors"] = _supcon_errors(x[rows], rows)
        results[rank] = out
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_process_results():
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(_worker, args=(free_port(), results), nprocs=WORLD, join=True)
    return dict(results)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(LOSSES))
def test_two_processes_equal_one_process_on_the_concatenated_batch(
    two_process_results, name, path
):
    x, y, weight = _problem()
    value, w_grad, x_grad, y_grad = _loss_and_grads(name, x, y, weight, _labels(name))
    for rank in range(WORLD):
        rank_value, rank_w_grad, rank_x_grad, rank_y_grad = two_process_results[rank][
            name, path
        ]
        rows = slice(rank * ROWS, (rank + 1) * ROWS)
        torch.testing.assert_close(rank_value, value, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(rank_w_grad, w_grad, rtol=1e-10, atol=1e-12)
        # DDP averages over processes, so each slice's own gradient is WORLD x the global one
        torch.testing.assert_close(rank_x_grad / WORLD, x_grad[rows], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(rank_y_grad / WORLD, y_grad[rows], rtol=1e-10, atol=1e-12)


def test_labels_gather_in_rank_order(two_process_results):
    for rank in range(WORLD):
        labels, offset = two_process_results[rank]["labels"]
        assert labels.tolist() == list(range(WORLD * ROWS))
        assert offset == rank * ROWS


def test_unequal_batches_raise_value_error_on_every_process(two_process_results):
    for rank in range(WORLD):
        assert "same batch size" in two_process_results[rank]["unequal"]
        assert "same number of shared negatives" in two_process_results[rank]["unequal_pool"]


def test_supcon_no_positive_errors_are_raised_on_every_process(two_process_results):
    """A process whose own anchors all have a positive still raises (with the global count),
    so no process is left waiting in a collective."""
    for rank in range(WORLD):
        errors = two_process_results[rank]["supcon_errors"]
        assert "1 anchor(s) without a positive" in errors["raise"]
        assert "no anchor a positive" in errors["none"]


def test_single_process_helpers_are_identities():
    x = torch.randn(3, 2, generator=torch.Generator().manual_seed(1))
    assert not distributed.is_distributed()
    assert distributed.world_size() == 1 and distributed.rank() == 0
    assert distributed.gather(x) is x
    gathered, offset = distributed.gather_rows(x)
    assert gathered is x and offset == 0
    mean = distributed.all_reduce_mean(x)
    torch.testing.assert_close(mean, x)
    assert mean is not x


@pytest.mark.parametrize("name", list(LOSSES))
def test_distributed_flag_without_process_group_is_the_plain_loss(name):
    x, y, weight = _problem()
    plain = _loss_and_grads(name, x, y, weight, _labels(name))
    flagged = _loss_and_grads(name, x, y, weight, _labels(name), distributed_=True)
    for a, b in zip(plain, flagged, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
