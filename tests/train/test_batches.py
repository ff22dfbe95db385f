"""The sample order: seeded per epoch, full batches only, split across processes."""

import pytest
import torch

from contrastkit.train.batches import epoch_permutation, local_batches


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

