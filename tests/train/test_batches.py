"""The sample order: seeded per epoch, full batches only, split across processes."""

import time

import pytest
import torch

from contrastkit.train.batches import (
    batch_loader,
    epoch_permutation,
    fetched_ahead,
    local_batches,
)


def test_epoch_order_is_seeded_and_changes_with_the_epoch():
    assert torch.equal(epoch_permutation(50, seed=1, epoch=3), epoch_permutation(50, 1, 3))
    assert not torch.equal(epoch_permutation(50, 1, 3), epoch_permutation(50, 1, 4))
    assert sorted(epoch_permutation(50, 1, 3).tolist()) == list(range(50))


def test_processes_together_see_exactly_the_single_process_batches():
    single = local_batches(103, batch_size=20, seed=0, epoch=2)
    assert len(single) == 5 and all(len(batch) == 20 for batch in single)  # remainder dropped
    ranks = [local_batches(103, 20, 0, 2, rank=r, world_size=4) for r in range(4)]
    for step, batch in enumerate(single):
        assert sum((ranks[r][step] for r in range(4)), []) == batch


def test_batch_must_divide_over_processes_and_fit_the_dataset():
    with pytest.raises(ValueError, match="divisible"):
        local_batches(100, 10, 0, 0, rank=0, world_size=3)
    with pytest.raises(ValueError, match="dataset size"):
        local_batches(10, 16, 0, 0)



def test_fetched_ahead_yields_the_same_items_and_fetches_one_while_the_caller_works():
    fetched = []

    def source():
        for item in range(5):
            fetched.append(item)
            yield item

    seen = []
    for item in fetched_ahead(source(), ahead=True):
        deadline = time.monotonic() + 5  # the next one comes while the caller holds this one
        while len(fetched) < min(item + 2, 5) and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append((item, len(fetched)))
    assert seen == [(0, 2), (1, 3), (2, 4), (3, 5), (4, 5)]
    assert list(fetched_ahead(iter(range(3)), ahead=False)) == [0, 1, 2]


def test_fetched_ahead_raises_a_fetch_error_when_its_batch_is_due():
    def source():
        yield "first"
        raise OSError("file 2 is unreadable")

    batches = fetched_ahead(source(), ahead=True)
    assert next(batches) == "first"
    with pytest.raises(OSError, match="unreadable"):
        next(batches)


def test_a_run_fetching_ahead_trains_the_same_weights(tmp_path, monkeypatch):
    """The GPU's batches fetched ahead (forced here on the CPU) change nothing of the run."""
    from contrastkit.train import batches, pretrain
    from tests.train.tiny import tiny_config

    plain = pretrain(tiny_config(tmp_path / "plain", epochs=1)).encoder
    real = batches.fetched_ahead
    monkeypatch.setattr(batches, "fetched_ahead", lambda loader, ahead: real(loader, ahead=True))
    ahead = pretrain(tiny_config(tmp_path / "ahead", epochs=1)).encoder
    for a, b in zip(plain.state_dict().values(), ahead.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_iterating_a_batch_loader_leaves_torch_s_global_generator_alone():
    """A model's dropout draws from the global generator: a loader started when a run resumes
    mid-epoch must not take a draw the uninterrupted run took at the epoch's start."""
    dataset = torch.utils.data.TensorDataset(torch.arange(8.0))
    before = torch.get_rng_state()
    assert [batch[0].tolist() for batch in batch_loader(dataset, [[0, 1], [2, 3]])] == [
        [0.0, 1.0], [2.0, 3.0]]
    assert torch.equal(torch.get_rng_state(), before)
