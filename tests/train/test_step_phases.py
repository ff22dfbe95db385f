"""Each phase of a training step carries its profiler label, so a profile of a real run says
where the step's time goes (benchmarks/train_step.py reads these labels)."""

from collections import Counter

import pytest
from torch.profiler import ProfilerActivity, profile

from contrastkit.data import load_dataset
from contrastkit.train import pretrain
from contrastkit.train.batches import local_batches
from contrastkit.train.step import PHASES
from tests.train.tiny import tiny_config


def labelled_phases(config) -> Counter:
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        pretrain(config)
    return Counter(event.key.removeprefix("contrastkit/") for event in profiler.events()
                   if event.key.startswith("contrastkit/"))


@pytest.mark.parametrize("chunk, phases", [
    (0, {"augment", "forward", "loss", "backward", "optimizer", "monitor", "check"}),
    (64, {"augment", "grad_cache", "optimizer", "monitor", "check"}),
])
def test_every_step_runs_each_of_its_phases_once_under_its_label(tmp_path, chunk, phases):
    config = tiny_config(tmp_path, epochs=1, grad_cache_chunk=chunk)
    counts = labelled_phases(config)
    steps = len(local_batches(len(load_dataset("digits", "train")), config.batch_size,
                              config.seed, 0))
    assert set(counts) == phases and set(phases) <= set(PHASES)
    assert all(count == steps for count in counts.values()), counts
