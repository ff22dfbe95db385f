"""OnlineProbe on its own: its state continues a probe exactly, it draws no random number of
the caller's, bad labels and a bad state are named, and on a GPU it scores what it scores on
the CPU."""

from __future__ import annotations

import pytest
import torch

from contrastkit.evaluate import OnlineProbe, knn_accuracy, knn_scores
from tests.train.own_objects import Blobs, mlp


def _probe(**changes) -> OnlineProbe:
    settings = {"train": Blobs(size=300, seed=0), "test": Blobs(size=100, seed=1),
                "num_classes": 4}
    return OnlineProbe(**{**settings, **changes})


def test_a_probe_loaded_from_a_state_continues_as_the_probe_it_came_from():
    encoder = mlp().eval()
    whole, first = _probe(), _probe()
    whole(encoder), first(encoder)
    assert first.state_dict()["epochs_probed"] == 1
    resumed = _probe()
    resumed.load_state_dict(first.state_dict())
    assert resumed(encoder) == whole(encoder)
    for name, value in whole.state_dict()["head"].items():
        assert torch.equal(resumed.state_dict()["head"][name], value), name


def test_the_probe_draws_no_random_number_of_its_caller():
    encoder = mlp().eval()
    before = torch.get_rng_state()
    _probe()(encoder)
    assert torch.equal(torch.get_rng_state(), before)


def test_its_knn_is_the_offline_knn_of_the_encoder_s_output():
    encoder, probe = mlp().eval(), _probe()
    measured = probe(encoder)
    train_x, train_y = probe.features(encoder, probe.train)
    test_x, test_y = probe.features(encoder, probe.test)
    assert measured["online_knn_top1"] == knn_accuracy(train_x, train_y, test_x, test_y,
                                                       4)["top1"]


def test_a_large_training_split_is_read_through_a_fixed_subset():
    """Beyond ``max_train`` examples the probe reads a subset drawn from its seed, the same at
    every epoch and for the same seed (its bank and its head's data), so an epoch's probe costs
    ``max_train`` forwards, not a pass over the whole split."""
    encoder = mlp().eval()
    probe, again, other = (_probe(max_train=120, seed=seed) for seed in (0, 0, 1))
    train_x, _ = probe.features(encoder, probe.train)
    assert train_x.shape[0] == 120
    assert probe.train.indices == again.train.indices != other.train.indices
    assert len(set(probe.train.indices)) == 120
    assert len(_probe().train) == 300  # within the cap: the whole split
    with pytest.raises(ValueError, match="max_train"):
        _probe(max_train=0)


def test_bad_labels_and_a_bad_state_are_named():
    with pytest.raises(ValueError, match=r"labels must lie in \[0, num_classes\) = \[0, 3\), "
                                         r"got labels up to 3"):
        _probe(num_classes=3)(mlp())
    with pytest.raises(ValueError, match="needs labeled training and held-out samples, got "
                                         "300 and 0 with a label"):
        _probe(test=Blobs(size=10, labeled=False))(mlp())
    with pytest.raises(ValueError, match=r"needs the probe's state_dict\(\).*got \['head'\]"):
        _probe().load_state_dict({"head": None})


@pytest.mark.cuda
def test_on_a_gpu_it_scores_what_it_scores_on_the_cpu():
    generator = torch.Generator().manual_seed(0)
    bank, queries = torch.randn(50, 8, generator=generator), torch.randn(20, 8, generator=generator)
    labels = torch.arange(50) % 4
    torch.testing.assert_close(knn_scores(bank.cuda(), labels.cuda(), queries.cuda(), 4).cpu(),
                               knn_scores(bank, labels, queries, 4))
    encoder = mlp().eval()
    on_cpu = _probe()(encoder)
    on_gpu = _probe()(encoder.cuda())
    assert on_gpu["online_knn_top1"] == pytest.approx(on_cpu["online_knn_top1"], abs=2.0)
    assert on_gpu["online_linear_top1"] == pytest.approx(on_cpu["online_linear_top1"], abs=2.0)
