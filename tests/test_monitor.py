"""SimilarityMonitor against a loop over the pairs of each batch in float64 (Def. 4.1 of the
central paper), and against the geometry functions on the same embeddings."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

from contrastkit.geometry import effective_rank, similarity_stats, uniformity
from contrastkit.monitor import SimilarityMonitor
from contrastkit.theory import minibatch_variance_bounds
from tests.host_reads import count_host_reads


def _batches(sizes, d=6, seed=0, aligned=0.3):
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for size in sizes:
        u = torch.randn(size, d, generator=generator)
        batches.append((u, u + aligned * torch.randn(size, d, generator=generator)))
    return batches


def _unit(x):
    x = x.double().numpy()
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _reference(batches, labels=None):
    """Mean and population variance of each kind of in-batch pair, over all the batches'
    pairs, by a loop over the pairs."""
    pairs = {"positive": [], "negative": [], "within": [], "negative_same_class": [],
             "negative_different_class": []}
    for index, (u, v) in enumerate(batches):
        u, v = _unit(u), _unit(v)
        for i, j in itertools.product(range(len(u)), repeat=2):
            if i == j:
                pairs["positive"].append(u[i] @ v[i])
                continue
            pairs["negative"].append(u[i] @ v[j])
            pairs["within"] += [u[i] @ u[j], v[i] @ v[j]]
            if labels is not None:
                same = labels[index][i] == labels[index][j]
                pairs["negative_same_class" if same else "negative_different_class"].append(
                    u[i] @ v[j])
    return {kind: (np.mean(values), np.var(values)) for kind, values in pairs.items() if values}


def _feed(monitor, batches, labels=None):
    results = [monitor.update(u, v, None if labels is None else labels[i])
               for i, (u, v) in enumerate(batches)]
    return results


def test_the_window_holds_the_statistics_of_all_its_in_batch_pairs():
    batches = _batches([5, 8, 3])
    monitor = SimilarityMonitor(log_every=3)
    results = _feed(monitor, batches)
    assert results[:2] == [None, None]
    for kind, (mean, var) in _reference(batches).items():
        assert results[2][f"{kind}_mean"] == pytest.approx(mean, abs=1e-12)
        assert results[2][f"{kind}_var"] == pytest.approx(var, abs=1e-12)
    assert results[2]["alignment"] == pytest.approx(
        np.mean([np.sum((_unit(u) - _unit(v)) ** 2, axis=1).mean() * len(u)
                 for u, v in batches]) * 3 / 16, abs=1e-12)
    assert results[2]["steps"] == 3
    rows = [(_unit(u), _unit(v)) for u, v in batches]
    u, v = (np.concatenate([pair[k] for pair in rows]) for k in (0, 1))
    across = [u[i] @ v[j] for i, j in itertools.product(range(len(u)), repeat=2) if i != j]
    assert results[2]["window_negative_mean"] == pytest.approx(np.mean(across), abs=1e-12)
    assert results[2]["window_negative_var"] == pytest.approx(np.var(across), abs=1e-12)


def test_labels_split_the_negatives_by_class():
    batches = _batches([6, 7], seed=1)
    labels = [torch.tensor([0, 1, 0, 2, 1, 0]), torch.tensor([1, 1, 0, 0, 2, 2, 1])]
    result = _feed(SimilarityMonitor(log_every=2), batches, labels)[-1]
    for kind, (mean, var) in _reference(batches, labels).items():
        assert result[f"{kind}_mean"] == pytest.approx(mean, abs=1e-12)
        assert result[f"{kind}_var"] == pytest.approx(var, abs=1e-12)


def test_uniformity_and_effective_rank_are_those_of_the_window_embeddings():
    batches = _batches([9, 12], d=5, seed=2)
    result = _feed(SimilarityMonitor(log_every=2), batches)[-1]
    expected = np.mean([(uniformity(u, 2) + uniformity(v, 2)) / 2 for u, v in batches])
    assert result["uniformity"] == pytest.approx(expected, abs=1e-12)
    rows = torch.from_numpy(np.concatenate([_unit(x) for batch in batches for x in batch]))
    assert result["effective_rank"] == pytest.approx(effective_rank(rows), abs=1e-6)


def test_a_new_window_starts_after_each_log():
    first, second = _batches([4, 4], seed=3), _batches([6], seed=4)
    monitor = SimilarityMonitor(log_every=2)
    _feed(monitor, first)
    monitor.update(*second[0])
    result = monitor.update(*second[0])
    mean, var = _reference(second * 2)["negative"]
    assert result["negative_mean"] == pytest.approx(mean, abs=1e-12)
    assert result["negative_var"] == pytest.approx(var, abs=1e-12)
    assert monitor.step == 4


@pytest.mark.filterwarnings("ignore:SimilarityMonitor")
def test_the_theory_reference_values_use_n_and_the_batch_size():
    result = _feed(SimilarityMonitor(n=50, log_every=1), _batches([10]))[0]
    bounds = minibatch_variance_bounds(50, 10)
    assert result["theory_negative_mean"] == -1 / 49
    assert (result["theory_negative_var_low"], result["theory_negative_var_high"]) == (
        bounds.low, bounds.high)
    assert "theory_negative_mean" not in _feed(SimilarityMonitor(log_every=1), _batches([10]))[0]


def test_collapse_is_warned_of_once():
    noise = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
    collapsed = torch.ones(8, 4) + 1e-3 * noise
    monitor = SimilarityMonitor(log_every=1)
    with pytest.warns(RuntimeWarning, match="look collapsed at step 1: effective rank 1"):
        monitor.update(collapsed, collapsed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monitor.update(collapsed, collapsed)
    assert list(monitor.alerts) == ["collapse"]


def _simplex(n):
    """n unit vectors with every pairwise similarity -1/(n-1)."""
    points = torch.eye(n, dtype=torch.float64) - 1 / n
    return points / points.norm(dim=1, keepdim=True)


def test_excessive_separation_is_warned_of_only_below_the_simplex():
    u = _simplex(4)
    rotated = u @ torch.linalg.matrix_exp(torch.tensor(
        [[0, 0.6, 0, 0], [-0.6, 0, 0, 0], [0, 0, 0, 0.6], [0, 0, -0.6, 0]], dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SimilarityMonitor(n=4, log_every=1).update(u, u)   # the optimum: -1/(n-1) exactly
        SimilarityMonitor(n=4, log_every=1).update(u, rotated)   # positives < 1, mean -1/3
    monitor = SimilarityMonitor(n=1000, log_every=1)
    with pytest.warns(RuntimeWarning, match="excessive separation at step 1: the negative-pair "
                                            "mean over the window -0.2.* is below -1/\\(n-1\\) "
                                            "= -0.001"):
        monitor.update(u, rotated)


def test_a_non_finite_batch_is_warned_of_and_left_out():
    batches = _batches([5, 5], seed=5)
    broken = batches[0][0].clone()
    broken[2, 1] = float("nan")
    monitor = SimilarityMonitor(log_every=3)
    with pytest.warns(RuntimeWarning, match="a non-finite embedding at step 2"):
        results = [monitor.update(*batches[0]), monitor.update(broken, batches[0][1]),
                   monitor.update(*batches[1])]
    for kind, (mean, var) in _reference(batches).items():
        assert results[-1][f"{kind}_mean"] == pytest.approx(mean, abs=1e-12)
        assert results[-1][f"{kind}_var"] == pytest.approx(var, abs=1e-12)
    assert results[-1]["steps"] == 2


@pytest.mark.parametrize("arguments, message", [
    ({"n": 1}, "n must be >= 2, got 1"),
    ({"log_every": 0}, "log_every must be >= 1, got 0"),
    ({"uniformity_t": -1.0}, "uniformity_t must be > 0"),
])
def test_bad_settings_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        SimilarityMonitor(**arguments)


def test_compute_before_any_batch_is_an_error():
    with pytest.raises(ValueError, match="compute\\(\\) needs at least one finite batch"):
        SimilarityMonitor().compute()


def test_last_batch_holds_each_kind_of_pair_of_the_batch_added_last():
    batches = _batches([5, 8, 6], seed=7)
    labels = [torch.tensor([0, 1, 0, 1, 1]), torch.tensor([0, 0, 1, 1, 2, 2, 0, 1]),
              torch.tensor([2, 2, 2, 1, 1, 0])]
    monitor = SimilarityMonitor(log_every=2)
    for index, (u, v) in enumerate(batches):
        monitor.update(u, v, labels[index])
        expected = _reference([(u, v)], [labels[index]])
        moments = {key for key in monitor.last_batch if key.endswith(("_mean", "_var"))}
        assert moments == {f"{kind}_{name}" for kind in expected for name in ("mean", "var")}
        for kind, (mean, var) in expected.items():
            assert monitor.last_batch[f"{kind}_mean"] == pytest.approx(mean, abs=1e-12)
            assert monitor.last_batch[f"{kind}_var"] == pytest.approx(var, abs=1e-12)
    monitor.update(*batches[0])  # without labels: no class split
    assert "negative_same_class_mean" not in monitor.last_batch
    broken = batches[0][0].clone()
    broken[0, 0] = float("inf")
    with pytest.warns(RuntimeWarning, match="non-finite"):
        monitor.update(broken, batches[0][1])
    assert monitor.last_batch is None


def test_a_restored_state_continues_the_window_without_losing_or_repeating_a_step():
    """Stopped after 4 of 9 steps (log_every=3: in the middle of the second window) and
    restored into a new monitor, the run gives the windows of an uninterrupted monitor."""
    batches = _batches([6] * 9, seed=11)
    warnings.simplefilter("ignore")  # (excessive separation; pytest restores the filters)
    uninterrupted = SimilarityMonitor(n=100, log_every=3)
    expected = _feed(uninterrupted, batches)
    stopped = SimilarityMonitor(n=100, log_every=3)
    before = _feed(stopped, batches[:4])
    state = stopped.state_dict()
    _feed(stopped, batches[4:6])  # what a killed run did after its checkpoint: not kept
    resumed = SimilarityMonitor(n=100, log_every=3)
    resumed.load_state_dict(state, map_location="cpu")
    assert resumed.step == 4
    assert before + _feed(resumed, batches[4:]) == expected
    assert resumed.alerts == uninterrupted.alerts


def test_a_restored_state_keeps_the_alerts_given_and_the_new_settings():
    collapsed = torch.ones(8, 4) + 1e-3 * torch.randn(8, 4, generator=torch.Generator()
                                                      .manual_seed(0))
    monitor = SimilarityMonitor(log_every=1)
    with pytest.warns(RuntimeWarning, match="collapsed"):
        monitor.update(collapsed, collapsed)
    resumed = SimilarityMonitor(log_every=5)
    resumed.load_state_dict(monitor.state_dict())
    assert resumed.log_every == 5 and list(resumed.alerts) == ["collapse"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # given once: not again after the restore
        for _ in range(5):
            resumed.update(collapsed, collapsed)


@pytest.mark.parametrize("state, message", [
    ({"format": 99, "progress": b""}, "state must be a SimilarityMonitor.state_dict\\(\\) "
                                      "\\(format 1\\), got 99"),
    ([1, 2], "got 'list'"),
    ({"format": 1, "progress": b"not a state"}, "state's progress cannot be read"),
])
def test_load_state_dict_rejects_what_is_not_a_state(state, message):
    with pytest.raises(ValueError, match=message):
        SimilarityMonitor().load_state_dict(state)


def test_the_statistics_are_those_of_geometry_similarity_stats_on_the_same_embeddings():
    """One window of two labelled float32 batches against ``geometry.similarity_stats``: each
    batch's pairs pooled, and all the window's rows at once for ``window_negative_*``."""
    from contrastkit.geometry import similarity_stats

    batches = [tuple(x.float() for x in batch) for batch in _batches([32, 32], d=16, seed=6)]
    generator = torch.Generator().manual_seed(6)
    labels = [torch.randint(0, 4, (32,), generator=generator) for _ in batches]
    result = _feed(SimilarityMonitor(log_every=2), batches, labels)[-1]
    per_batch = [similarity_stats(u, v, y) for (u, v), y in zip(batches, labels, strict=True)]
    for kind in ("positive", "negative", "within", "negative_same_class",
                 "negative_different_class"):
        counts = [getattr(stats, f"{kind}_count") for stats in per_batch]
        means = [getattr(stats, f"{kind}_mean") for stats in per_batch]
        squares = [getattr(stats, f"{kind}_var") + getattr(stats, f"{kind}_mean") ** 2
                   for stats in per_batch]
        mean = np.average(means, weights=counts)
        assert result[f"{kind}_mean"] == pytest.approx(mean, abs=1e-6)
        assert result[f"{kind}_var"] == pytest.approx(
            np.average(squares, weights=counts) - mean * mean, abs=1e-6)
    window = similarity_stats(*(torch.cat(view) for view in zip(*batches, strict=True)))
    assert result["window_negative_mean"] == pytest.approx(window.negative_mean, abs=1e-6)
    assert result["window_negative_var"] == pytest.approx(window.negative_var, abs=1e-6)
    assert result["alignment"] == pytest.approx(
        2 - 2 * np.average([s.positive_mean for s in per_batch]), abs=1e-6)


@pytest.mark.parametrize("bad, message", [
    (lambda u, v: (torch.randn(5, 9), torch.randn(5, 9)),
     "u has dim 9, but this window's earlier batches have dim 6"),
    (lambda u, v: (u, v[:, :4]), "u and v must have the same shape"),
    (lambda u, v: (u[:1], v[:1]), "batch of at least 2 rows"),
    (lambda u, v: (u.long(), v.long()), "u must be a floating-point"),
    (lambda u, v: (u, v, torch.tensor([0, 1])), "labels must have one entry per row"),
])
def test_a_rejected_batch_leaves_no_trace(bad, message):
    """A batch refused with a ValueError changes nothing: not the window's statistics, not the
    step count (audit: a batch of another dimension entered the window before it was refused,
    positive mean 0.140 against 0.277 clean, and advanced the step)."""
    batches = _batches([5, 5, 5], seed=3)
    clean = SimilarityMonitor(log_every=3)
    expected = _feed(clean, batches)
    monitor = SimilarityMonitor(log_every=3)
    monitor.update(*batches[0])
    with pytest.raises(ValueError, match=message):
        monitor.update(*bad(*batches[1]))
    assert monitor.step == 1
    assert [monitor.update(*batch) for batch in batches[1:]][-1] == expected[-1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prepare_reads_nothing_from_the_device_and_update_reads_once(monkeypatch, dtype):
    """A training step reads the monitor's numbers with its loss values in one transfer: the
    monitor's own work on a batch must not wait for the device (no value read in ``prepare``),
    and ``update`` reads one vector. The statistics are those of ``similarity_stats``."""
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(32, 8, generator=generator).to(dtype)
    v = (u.float() + 0.3 * torch.randn(32, 8, generator=generator)).to(dtype)
    monitor = SimilarityMonitor(n=100, log_every=1)
    reads = count_host_reads(monkeypatch)
    prepared = monitor.prepare(u, v)
    assert reads == []
    numbers = prepared.numbers.tolist()
    assert reads == ["tolist"]
    monkeypatch.undo()
    window = monitor.add_prepared(prepared, numbers)
    expected = similarity_stats(u.double(), v.double())
    assert window["negative_var"] == pytest.approx(expected.negative_var, rel=1e-12)
    assert window["positive_mean"] == pytest.approx(expected.positive_mean, rel=1e-12)
