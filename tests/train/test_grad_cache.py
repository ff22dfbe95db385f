"""Gradient caching (contrastkit.train.grad_cache) leaves in the encoder the gradient of the
whole batch's loss, for every registered loss, with dropout replayed and BatchNorm handled."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from contrastkit import distributed, losses
from contrastkit.train.grad_cache import GatheredLoss, grad_cache
from tests.ports import free_port
from tests.train.test_grad_cache_negatives import (
    DDP_CASES,
    assert_ddp_negatives_case,
    ddp_negatives_case,
)

BATCH, IN_DIM, DIM, CHUNK = 12, 7, 5, 5
LABELS = torch.tensor([0, 1, 2, 0, 1, 2, 3, 3, 0, 1, 2, 3])
SETTINGS = {"n": 100}  # VRNS's dataset size; the other losses keep their defaults


def _encoder(dropout: float = 0.0, batch_norm: bool = False, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(IN_DIM, 16)]
    layers += [nn.BatchNorm1d(16)] if batch_norm else []
    layers += [nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, DIM)]
    return nn.Sequential(*layers)


def _views(dtype=torch.float32):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(2, BATCH, IN_DIM, generator=generator, dtype=dtype).unbind(0)


def _criterion(name: str) -> losses.ContrastiveLoss:
    return losses.build(name, SETTINGS, **losses.get(name).training_options)


def _labels(criterion) -> torch.Tensor | None:
    return LABELS if criterion.uses_labels else None


def _plain_gradients(encoder, criterion, view1, view2, labels, forward=None):
    """The reference: one forward of each whole view with a graph, one backward."""
    forward = forward or encoder
    encoder.zero_grad()
    total = criterion.compute(forward(view1), forward(view2), labels).total
    total.backward()
    return total.detach(), [p.grad.clone() for p in encoder.parameters()]


def _cached_gradients(encoder, criterion, view1, view2, labels, **options):
    encoder.zero_grad()
    output = grad_cache(encoder, criterion, view1, view2, CHUNK, labels, **options)
    return output.total, [p.grad.clone() for p in encoder.parameters()]


def _assert_gradients_equal(expected, actual, tolerance):
    for want, got in zip(expected, actual, strict=True):
        torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name", losses.names(regularizers=True))
def test_every_loss_gets_the_whole_batch_gradient_in_float32(name):
    encoder, criterion = _encoder(), _criterion(name)
    view1, view2 = _views()
    labels = _labels(criterion)
    loss, expected = _plain_gradients(encoder, criterion, view1, view2, labels)
    cached_loss, actual = _cached_gradients(encoder, criterion, view1, view2, labels)
    torch.testing.assert_close(cached_loss, loss, rtol=1e-5, atol=1e-5)
    _assert_gradients_equal(expected, actual, 1e-5)


@pytest.mark.parametrize("name", ["simclr", "siglip", "supcon", "hscl", "spectral"])
def test_the_gradient_is_exact_in_float64(name):
    encoder, criterion = _encoder().double(), _criterion(name)
    view1, view2 = _views(torch.float64)
    labels = _labels(criterion)
    _, expected = _plain_gradients(encoder, criterion, view1, view2, labels)
    _, actual = _cached_gradients(encoder, criterion, view1, view2, labels)
    _assert_gradients_equal(expected, actual, 1e-12)


def test_a_composed_objective_with_vrns_and_polarization_gets_the_whole_batch_gradient():
    criterion = (losses.build("simclr", {"temperature": 0.2}) + 30 * losses.build("vrns", SETTINGS)
                 + 0.1 * losses.build("polarization"))
    encoder = _encoder()
    view1, view2 = _views()
    _, expected = _plain_gradients(encoder, criterion, view1, view2, None)
    _, actual = _cached_gradients(encoder, criterion, view1, view2, None)
    _assert_gradients_equal(expected, actual, 1e-5)


def test_dropout_masks_are_replayed_in_the_second_pass():
    """The reference draws the masks chunk by chunk from the same random state, as the first
    pass does; without replaying the state, the second pass would draw new masks."""
    encoder, criterion = _encoder(dropout=0.5), _criterion("simclr")
    view1, view2 = _views()

    def chunked(view):
        return torch.cat([encoder(chunk) for chunk in view.split(CHUNK)])

    torch.manual_seed(123)
    _, expected = _plain_gradients(encoder, criterion, view1, view2, None, forward=chunked)
    after_reference = torch.rand(1)
    torch.manual_seed(123)
    _, actual = _cached_gradients(encoder, criterion, view1, view2, None)
    _assert_gradients_equal(expected, actual, 1e-5)
    assert torch.equal(torch.rand(1), after_reference)  # the random stream continues alike


def test_frozen_batch_norm_equals_a_plain_step_in_eval_mode_and_updates_nothing():
    encoder, criterion = _encoder(batch_norm=True), _criterion("simclr")
    view1, view2 = _views()
    with torch.no_grad():  # running statistics away from their initial 0 and 1
        encoder[1].running_mean.uniform_(-1, 1)
        encoder[1].running_var.uniform_(0.5, 2)
    before = {k: v.clone() for k, v in encoder.state_dict().items()}
    encoder.eval()
    _, expected = _plain_gradients(encoder, criterion, view1, view2, None)
    encoder.train()
    _, actual = _cached_gradients(encoder, criterion, view1, view2, None, batch_norm="frozen")
    _assert_gradients_equal(expected, actual, 1e-5)
    assert encoder.training and encoder[1].training
    for key, value in encoder.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_chunk_batch_norm_updates_the_running_statistics_once_per_chunk():
    """As one forward of each chunk would, not twice (once per pass)."""
    encoder, criterion = _encoder(batch_norm=True), _criterion("simclr")
    reference = _encoder(batch_norm=True)
    view1, view2 = _views()
    with torch.no_grad():
        for view in (view1, view2):
            for chunk in view.split(CHUNK):
                reference(chunk)
    _cached_gradients(encoder, criterion, view1, view2, None)
    for (key, want), got in zip(reference.state_dict().items(), encoder.state_dict().values(),
                                strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=key)


def test_chunk_batch_norm_gradient_is_that_of_the_chunked_forward():
    encoder, criterion = _encoder(batch_norm=True), _criterion("simclr")
    view1, view2 = _views()

    def chunked(view):
        return torch.cat([encoder(chunk) for chunk in view.split(CHUNK)])

    _, expected = _plain_gradients(encoder, criterion, view1, view2, None, forward=chunked)
    _, actual = _cached_gradients(encoder, criterion, view1, view2, None)
    _assert_gradients_equal(expected, actual, 1e-5)


def test_gradients_accumulate_like_backward_and_the_loss_parameters_get_theirs():
    encoder = _encoder()
    scale = torch.tensor(3.0, requires_grad=True)

    class ScaledSimCLR(losses.ContrastiveLoss):
        def forward(self, u, v, labels=None):
            return scale * losses.simclr(u, v, temperature=0.5)

    view1, view2 = _views()
    encoder.zero_grad()
    ScaledSimCLR()(encoder(view1), encoder(view2)).backward()
    expected_scale = scale.grad.clone()
    expected = [2 * p.grad for p in encoder.parameters()]  # a second backward doubles them
    scale.grad = None
    grad_cache(encoder, ScaledSimCLR(), view1, view2, CHUNK)
    torch.testing.assert_close(scale.grad, expected_scale)
    _assert_gradients_equal(expected, [p.grad for p in encoder.parameters()], 1e-5)


def test_a_chunk_larger_than_the_batch_is_one_chunk():
    encoder, criterion = _encoder(), _criterion("simclr")
    view1, view2 = _views()
    _, expected = _plain_gradients(encoder, criterion, view1, view2, None)
    encoder.zero_grad()
    grad_cache(encoder, criterion, view1, view2, 10 * BATCH)
    _assert_gradients_equal(expected, [p.grad for p in encoder.parameters()], 1e-6)


@pytest.mark.parametrize(("options", "message"), [
    ({"chunk_size": 0}, "chunk_size"),
    ({"view2": torch.zeros(BATCH - 1, IN_DIM)}, "same number of rows"),
    ({"labels": torch.zeros(BATCH - 1)}, "labels"),
    ({"batch_norm": "sync"}, "batch_norm"),
])
def test_bad_arguments_are_named(options, message):
    view1, view2 = _views()
    arguments = {"view1": view1, "view2": view2, "chunk_size": CHUNK, **options}
    with pytest.raises(ValueError, match=message):
        grad_cache(_encoder(), _criterion("simclr"), **arguments)


def test_an_encoder_that_does_not_return_rows_is_named():
    view1, view2 = _views()
    with pytest.raises(ValueError, match="encoder must map"):
        grad_cache(nn.Flatten(0), _criterion("simclr"), view1, view2, CHUNK)


def _ddp_worker(rank: int, port: int, results) -> None:
    """Process ``rank`` of two: its half of the global batch, a DDP encoder, a loss that
    computes this process's share (``distributed=True``)."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    torch.set_num_threads(1)
    try:
        rows = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
        view1, view2 = _views()
        out = {}
        for name in ("simclr", "supcon", "hcl"):
            encoder = nn.parallel.DistributedDataParallel(_encoder())
            if losses.get(name).supports_distributed:
                criterion = losses.build(name, distributed=True)
            else:  # no per-process share: every process computes the global batch's loss
                criterion = GatheredLoss(losses.build(name))
            labels = LABELS[rows] if criterion.uses_labels else None
            output = grad_cache(encoder, criterion, view1[rows], view2[rows], 2, labels)
            out[name] = (distributed.all_reduce_mean(output.total),
                         [p.grad.clone() for p in encoder.parameters()])
        for case in DDP_CASES:  # with explicit negatives (test_grad_cache_negatives.py)
            out[case] = ddp_negatives_case(rank, case)
        results[rank] = out
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_process_results():
    results = mp.Manager().dict()
    mp.spawn(_ddp_worker, args=(free_port(), results), nprocs=2, join=True)
    return dict(results)


@pytest.mark.parametrize("name", ["simclr", "supcon", "hcl"])
def test_two_processes_with_ddp_equal_one_process_on_the_global_batch(two_process_results,
                                                                       name):
    encoder, criterion = _encoder(), _criterion(name)
    view1, view2 = _views()
    loss, expected = _plain_gradients(encoder, criterion, view1, view2, _labels(criterion))
    for rank in (0, 1):
        total, gradients = two_process_results[rank][name]
        torch.testing.assert_close(total, loss, rtol=1e-5, atol=1e-5)
        _assert_gradients_equal(expected, gradients, 1e-5)


@pytest.mark.parametrize("case", DDP_CASES)
def test_two_processes_with_explicit_negatives_equal_one_process(two_process_results, case):
    assert_ddp_negatives_case(case, [two_process_results[rank][case] for rank in (0, 1)])
