"""SimilarityMonitor's false-negative statistics against a float64 loop over the pairs of the
window's batches; no read from the device in ``prepare``; bad input."""

from __future__ import annotations

import pytest
import torch

from contrastkit.monitor import SimilarityMonitor
from contrastkit.theory import negative_similarity_band
from tests.geometry.false_negative_reference import lattice_batch, reference
from tests.host_reads import count_host_reads

FALSE_NEGATIVE_KEYS = ("negative_pairs", "negatives_above", "theory_negative_band")


def _window(sizes, seed):
    """Lattice batches (exact ties, copies of a positive) of ``sizes`` rows, with class
    labels and duplicate ids."""
    generator = torch.Generator().manual_seed(seed)
    batches, labels, duplicates = [], [], []
    for rows in sizes:
        u, v, ids = lattice_batch(rows, 8, generator)
        batches.append((u.float(), v.float()))  # +-1/2 and 0: exact in float32 too
        labels.append(torch.randint(0, 3, (rows,), generator=generator))
        duplicates.append(ids)
    return batches, labels, duplicates


def _false_negatives(stats):
    return {key: value for key, value in stats.items() if key.startswith(FALSE_NEGATIVE_KEYS)}


@pytest.mark.parametrize("split_classes", [True, False])
def test_the_window_holds_the_false_negatives_of_all_its_batches(split_classes):
    """Three batches of different sizes: each has its own band (n and its batch size); the
    window's counts are the loop's over all their pairs, its shares the counts over them."""
    n = 30
    batches, labels, duplicates = _window([6, 9, 7], seed=0)
    monitor = SimilarityMonitor(n=n, log_every=3, split_classes=split_classes)
    for batch, classes, ids in zip(batches, labels, duplicates, strict=True):
        result = monitor.update(*batch, classes, ids)
    highs = [negative_similarity_band(n, len(u)).high for u, _ in batches]
    expected = reference(batches, highs, labels, duplicates)
    last = negative_similarity_band(n, 7)
    expected |= {"theory_negative_band_low": last.low, "theory_negative_band_high": last.high}
    assert _false_negatives(result) == pytest.approx(expected, abs=1e-15)
    assert expected["negatives_above_positive_duplicate"] >= 6  # the planted ties
    assert ("negative_same_class_mean" in result) == split_classes


def test_last_batch_holds_the_false_negatives_of_the_batch_added_last():
    batches, labels, duplicates = _window([5, 8], seed=1)
    monitor = SimilarityMonitor(n=20, log_every=5)
    for batch, classes, ids in zip(batches, labels, duplicates, strict=True):
        monitor.update(*batch, classes, ids)
        high = negative_similarity_band(20, len(batch[0])).high
        assert _false_negatives(monitor.last_batch) == pytest.approx(
            reference([batch], [high], [classes], [ids]), abs=1e-15)


def test_without_n_or_beyond_it_there_is_no_band():
    """Without n no batch has a band; with n, a batch larger than n has none, and the window's
    band share is over the pairs of the batches that have one."""
    batches, _, _ = _window([6, 8], seed=2)
    no_n = SimilarityMonitor(log_every=2)
    result = [no_n.update(*batch) for batch in batches][-1]
    assert "negatives_above_band" not in result and "theory_negative_band_high" not in result
    assert result["negatives_above_positive_share"] == pytest.approx(
        reference(batches)["negatives_above_positive_share"], abs=1e-15)
    monitor = SimilarityMonitor(n=7, log_every=2)
    result = [monitor.update(*batch) for batch in batches][-1]
    expected = reference(batches, [negative_similarity_band(7, 6).high, None])
    assert expected["negatives_above_band_share"] == expected["negatives_above_band"] / 30
    assert _false_negatives(result) == pytest.approx(expected, abs=1e-15)


@pytest.mark.filterwarnings("ignore:SimilarityMonitor")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prepare_reads_nothing_from_the_device_with_labels_and_duplicates(monkeypatch, dtype):
    """The false-negative counts, like the rest of a batch's statistics, stay on the device
    until the one read of ``numbers`` (labels only count false negatives without the class
    split, which reads the classes)."""
    batches, labels, duplicates = _window([16], seed=3)
    u, v = (x.to(dtype) for x in batches[0])
    monitor = SimilarityMonitor(n=100, log_every=1, split_classes=False)
    reads = count_host_reads(monkeypatch)
    prepared = monitor.prepare(u, v, labels[0], duplicates[0])
    assert reads == []
    numbers = prepared.numbers.tolist()
    assert reads == ["tolist"]
    monkeypatch.undo()
    window = monitor.add_prepared(prepared, numbers)
    expected = reference([(u, v)], [negative_similarity_band(100, 16).high], labels, duplicates)
    assert {key: window[key] for key in expected} == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("bad, message", [
    ({"duplicates": torch.zeros(3, dtype=torch.long)}, "duplicates must have one entry per row"),
    ({"duplicates": torch.zeros(6)}, "duplicates must hold integer class ids"),
    ({"labels": torch.zeros(6, 1, dtype=torch.long)}, "labels must be 1-D"),
])
def test_bad_ids_are_refused_and_leave_no_trace(bad, message):
    batches, labels, duplicates = _window([6, 6], seed=4)
    clean = SimilarityMonitor(n=50, log_every=2)
    expected = [clean.update(*batch, classes, ids) for batch, classes, ids in
                zip(batches, labels, duplicates, strict=True)][-1]
    monitor = SimilarityMonitor(n=50, log_every=2)
    monitor.update(*batches[0], labels[0], duplicates[0])
    with pytest.raises(ValueError, match=message):
        monitor.update(*batches[1], **({"labels": labels[1], "duplicates": duplicates[1]} | bad))
    assert monitor.update(*batches[1], labels[1], duplicates[1]) == expected


def test_split_classes_must_be_a_bool():
    with pytest.raises(ValueError, match="split_classes must be True or False, got 'no'"):
        SimilarityMonitor(split_classes="no")  # type: ignore[arg-type]


def test_a_restored_monitor_continues_the_false_negative_counts():
    batches, labels, duplicates = _window([6, 7], seed=5)
    whole = SimilarityMonitor(n=40, log_every=2)
    expected = [whole.update(*batch, classes, ids) for batch, classes, ids in
                zip(batches, labels, duplicates, strict=True)][-1]
    first = SimilarityMonitor(n=40, log_every=2)
    first.update(*batches[0], labels[0], duplicates[0])
    resumed = SimilarityMonitor(n=40, log_every=2)
    resumed.load_state_dict(first.state_dict())
    assert resumed.update(*batches[1], labels[1], duplicates[1]) == expected
