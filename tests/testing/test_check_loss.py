"""contrastkit.testing.check_loss: the library's losses pass every property, and each planted
bug (tests/testing/planted.py) fails the property that is about it, and only that one."""

from __future__ import annotations

import pytest

from contrastkit import losses
from contrastkit.testing import check_loss
from tests.testing import planted

PROPERTIES = ["2 processes", "4 processes", "gradcheck", "chunk_size=3", "batch of one",
              "NaN input", "mixed precision"]


def _failed(result) -> list[str]:
    return [property.name for property in result.failed]


def test_a_registered_loss_passes_every_property():
    result = check_loss("supcon", verbose=False)
    assert [property.name for property in result.results] == PROPERTIES
    assert result.passed, str(result)
    assert result.loss == "supcon"


@pytest.mark.slow
@pytest.mark.parametrize("name", losses.names(regularizers=True))
def test_every_registered_loss_passes_every_property(name):
    result = check_loss(name, {"n": 50} if name == "vrns" else None, verbose=False)
    assert result.passed, str(result)


def test_the_correct_twin_of_the_planted_bugs_passes():
    result = check_loss(planted.Correct, world_sizes=(2,), verbose=False)
    assert result.passed, str(result)


@pytest.mark.parametrize("bug, where", [
    (planted.GatherWithoutGradient, "the gradient of v"),
    (planted.MissingOneOverWorldSize, "the mean of the values"),
])
def test_a_planted_distributed_bug_fails_the_processes_property(bug, where):
    result = check_loss(bug, world_sizes=(2,), verbose=False)
    assert _failed(result) == ["2 processes"]
    assert where in result.failed[0].detail
    assert result.failed[0].difference > 1e-3


@pytest.mark.parametrize("bug, settings, property, words", [
    (planted.DetachedCandidates, None, "gradcheck", "Jacobian mismatch"),
    (planted.ChunkMeans, None, "chunk_size=3", "largest difference"),
    (planted.NoFiniteCheck, None, "NaN input", "returns nan without an error"),
    (planted.UnstableLogSumExp, {"temperature": 0.005}, "mixed precision", "difference inf"),
])
def test_a_planted_single_process_bug_fails_its_property(bug, settings, property, words):
    result = check_loss(bug, settings, world_sizes=(), verbose=False)
    assert _failed(result) == [property]
    assert words in result.failed[0].detail


def test_the_low_temperature_of_the_overflow_bug_is_fine_for_a_stable_loss():
    """UnstableLogSumExp fails mixed precision for its bug, not for the temperature."""
    result = check_loss(planted.Correct, {"temperature": 0.005}, world_sizes=(), verbose=False)
    assert result.passed, str(result)


class _IndexErrorOnOneRow(planted.Correct):
    def forward(self, u, v, labels=None):
        if len(u) < 2:
            raise IndexError("index 1 is out of bounds for dimension 0 with size 1")
        return super().forward(u, v, labels)


def test_a_batch_of_one_passes_with_a_value_error_or_a_finite_value_only():
    by_name = {name: check_loss(loss, world_sizes=(), verbose=False).results[2]
               for name, loss in [("error", "simclr"), ("value", planted.Correct),
                                  ("other", _IndexErrorOnOneRow)]}
    assert [result.name for result in by_name.values()] == ["batch of one"] * 3
    assert by_name["error"].passed and "raises ValueError" in by_name["error"].detail
    assert by_name["value"].passed and "returns the finite value" in by_name["value"].detail
    assert not by_name["other"].passed
    assert "raises IndexError (expected a ValueError)" in by_name["other"].detail


def test_a_process_that_raises_fails_the_property_without_leaving_the_other_waiting():
    result = check_loss(planted.RaisesOnOneProcess, world_sizes=(2,), verbose=False)
    assert _failed(result) == ["2 processes"]
    assert "process 1 raised ValueError: planted error on process 1" in result.failed[0].detail


def test_a_factory_is_built_with_the_options_its_loss_declares():
    result = check_loss(planted.correct_at_temperature_0_3, world_sizes=(2,), verbose=False)
    assert result.passed, str(result)
    assert result.results[2].status == "pass"  # chunked: chunk_size= reached the loss


def test_verbose_prints_a_line_per_property_and_a_summary(capsys):
    result = check_loss("spectral", world_sizes=(2,))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [property.line() for property in result.results] + [result.summary()]
    assert lines[0].startswith("PASS  2 processes: largest difference ")
    assert lines[2] == "SKIP  chunk_size=3: the loss does not declare supports_chunking"
    assert lines[-1] == "spectral: every property holds"


@pytest.mark.parametrize("loss, options, words", [
    (planted.Correct(), {}, "pass its class"),
    (42, {}, "loss must be a registered name"),
    ("no_such_loss", {}, "loss must be one of"),
    (lambda temperature: planted.Correct(temperature), {}, "could not build the loss"),
    (lambda **options: 3.0, {}, "not a callable loss(u, v, labels)"),
    (planted.Correct, {"world_sizes": (3,)}, "it does not for [3]"),
    (planted.Correct, {"world_sizes": (1,)}, "world_sizes must be >= 2"),
    (planted.Correct, {"world_sizes": 2}, "world_sizes must be a sequence"),
    (planted.Correct, {"dim": 0}, "dim must be >= 1"),
    (planted.Correct, {"mixed_precision_tolerance": 0}, "mixed_precision_tolerance must be > 0"),
])
def test_bad_arguments_raise_value_error(loss, options, words):
    with pytest.raises(ValueError) as error:
        check_loss(loss, verbose=False, **options)
    assert words in str(error.value)


def test_processes_are_forked_only_where_no_cuda_device_makes_it_unsafe(monkeypatch):
    from contrastkit.testing import processes

    monkeypatch.setattr(processes.torch.cuda, "is_available", lambda: False)
    assert processes.start_method() == "fork"
    monkeypatch.setattr(processes.torch.cuda, "is_available", lambda: True)
    assert processes.start_method() == "spawn"


@pytest.mark.slow  # two fresh interpreters import torch: about 20 s on two cores
def test_spawned_processes_run_a_registered_loss(monkeypatch):
    """What a machine with a CUDA device does (the loss and the work pickled to fresh
    processes)."""
    from contrastkit.testing import processes

    monkeypatch.setattr(processes, "start_method", lambda: "spawn")
    result = check_loss("info_nce", world_sizes=(2,), verbose=False)
    assert result.passed, str(result)


def test_spawned_processes_name_a_loss_that_cannot_be_pickled(monkeypatch):
    from contrastkit.testing import processes

    monkeypatch.setattr(processes, "start_method", lambda: "spawn")
    result = check_loss(lambda **options: planted.Correct(**options), world_sizes=(2,),
                        verbose=False)
    assert _failed(result) == ["2 processes"]
    assert "cannot be pickled" in result.failed[0].detail
    assert "define the loss at a module's top level" in result.failed[0].detail
