"""A kill -9 at any instant of a checkpoint write leaves a run that resumes exactly, that
``evaluate`` finds, and that a plain rerun (without ``overwrite``) refuses to delete.

A kill -9 leaves on disk exactly what the process had written when it died. So one run is
watched: before every call the checkpoint writer makes to the ``os`` module (fsync, link,
rename, ...), during its first write and a later one that rotates ``previous.pt``, the run
folder is copied: each copy is the folder a kill at that instant leaves (and, with the
checkpoint being written cut in half, a kill in the middle of writing it). Each is resumed in a
folder of its own."""

import hashlib
import os
import shutil

import pytest
import torch

import contrastkit.train.checkpoint as checkpoint
import contrastkit.train.loop as loop
from contrastkit.cli import main
from contrastkit.evaluate.run import load_run_checkpoint
from contrastkit.train import load_checkpoint, pretrain, save_checkpoint
from contrastkit.train.checkpoint import (
    CHECKPOINT_FILES,
    LAST,
    PREVIOUS,
    WRITING,
    has_checkpoint,
)
from contrastkit.train.run_folder import start_run_dir
from tests.train.test_resume import steps_per_epoch, without_timing
from tests.train.tiny_captions import tiny_image_text_config

#: The writes watched: the run's first checkpoint and its third (at step 3 of its 4 steps,
#: when last.pt and previous.pt are both there).
WATCHED = (1, 3)


class SnapshotBeforeEachCall:
    """Stands in for the checkpoint module's ``os``: calls ``snapshot(name)`` before each of
    its functions is called."""

    def __init__(self, snapshot):
        self.snapshot = snapshot

    def __getattr__(self, name):
        real = getattr(os, name)
        if not callable(real):
            return real

        def watched(*args, **kwargs):
            self.snapshot(name)
            return real(*args, **kwargs)

        return watched


def _content(folder) -> tuple:
    """The files of ``folder`` and a digest of each: two snapshots alike are one state."""
    return tuple(sorted((path.name, hashlib.sha256(path.read_bytes()).hexdigest())
                        for path in folder.iterdir() if path.is_file()))


pytestmark = pytest.mark.usefixtures("no_curves")


@pytest.fixture(scope="module")
def killed_states(tmp_path_factory, no_curves):
    """The folders a kill at each instant of the watched writes leaves (distinct ones, in
    order), and the uninterrupted run."""
    root = tmp_path_factory.mktemp("kills")
    straight = pretrain(tiny_image_text_config(root / "straight", epochs=1))
    config = tiny_image_text_config(root / "watched", epochs=1, checkpoint_every=1)
    states, seen, saves = [], set(), []
    real_save = loop.save_checkpoint

    def snapshot(call: str) -> None:
        content = _content(config.run_dir)
        if content not in seen:
            seen.add(content)
            copy = root / f"state{len(states)}"
            shutil.copytree(config.run_dir, copy)
            states.append(copy)
        if call == "fsync" and (config.run_dir / WRITING).is_file():  # killed while writing it
            torn = root / f"state{len(states)}"
            shutil.copytree(config.run_dir, torn)
            data = (torn / WRITING).read_bytes()
            (torn / WRITING).write_bytes(data[:len(data) // 2])
            if _content(torn) not in seen:
                seen.add(_content(torn))
                states.append(torn)

    def watched_save(*args, **kwargs):
        saves.append(1)
        if len(saves) not in WATCHED:
            return real_save(*args, **kwargs)
        checkpoint.os = SnapshotBeforeEachCall(snapshot)
        try:
            return real_save(*args, **kwargs)
        finally:
            checkpoint.os = os
            snapshot("done")

    loop.save_checkpoint = watched_save
    try:
        pretrain(config)
    finally:
        loop.save_checkpoint = real_save
    return states, straight


def _in_a_folder_of_its_own(state, tmp_path, index):
    config = tiny_image_text_config(tmp_path / f"kill{index}", epochs=1)
    shutil.copytree(state, config.run_dir)
    return config


def _holds_a_checkpoint(folder) -> bool:
    """Whether any checkpoint file of ``folder`` (complete or not) loads."""
    for name in CHECKPOINT_FILES:
        try:
            torch.load(folder / name, weights_only=False)
            return True
        except Exception:  # missing or torn
            continue
    return False


def test_a_kill_at_any_instant_of_a_checkpoint_write_leaves_a_run_that_resumes_exactly(
        killed_states, tmp_path):
    states, straight = killed_states
    assert len(states) >= 2 * len(WATCHED)
    for index, state in enumerate(states):
        config = _in_a_folder_of_its_own(state, tmp_path, index)
        if not _holds_a_checkpoint(state):  # killed before the first one was complete
            assert not has_checkpoint(config.run_dir), state
            continue
        before = _content(config.run_dir)
        found = load_run_checkpoint(config.run_dir, "last")  # what evaluate and embed read
        assert found["epochs_completed"] == 0 and found["step"] >= 1, state
        with pytest.raises(ValueError, match="already holds a run"):
            start_run_dir(config, overwrite=False, is_main=True)  # a plain rerun's start
        assert _content(config.run_dir) == before, state
        resumed = pretrain(config, resume="last")
        for key, value in straight.encoder.state_dict().items():
            assert torch.equal(value, resumed.encoder.state_dict()[key]), (state, key)
        assert without_timing(resumed.history) == without_timing(straight.history), state


def _left_by_the_old_writer_between_its_renames(killed_states, tmp_path):
    """The folder that the writer of an earlier contrastkit left when killed between its renames
    (last.pt renamed to previous.pt, the complete .last.pt.tmp not yet renamed to last.pt)."""
    def written_past_last(state) -> bool:
        try:
            writing = torch.load(state / WRITING, weights_only=False)
        except Exception:  # missing or torn
            return False
        return (state / PREVIOUS).is_file() and writing["step"] > load_checkpoint(state)["step"]

    state = next(filter(written_past_last, killed_states[0]))
    config = _in_a_folder_of_its_own(state, tmp_path, "old")
    os.replace(config.run_dir / LAST, config.run_dir / PREVIOUS)
    return config


def test_a_folder_left_by_the_old_writer_between_its_renames_resumes_and_evaluates(
        killed_states, tmp_path, capsys):
    config = _left_by_the_old_writer_between_its_renames(killed_states, tmp_path)
    before = _content(config.run_dir)
    assert main(["pretrain", f"runs_dir={config.runs_dir}", f"name={config.name}"]) == 2
    assert "already holds a run; pass --resume" in capsys.readouterr().err
    assert _content(config.run_dir) == before  # nothing deleted
    assert main(["evaluate", str(config.run_dir), "--pairs", "10", "--device", "cpu",
                 "--no-progress"]) == 0
    straight = killed_states[1]
    resumed = pretrain(config, resume="last")
    for key, value in straight.encoder.state_dict().items():
        assert torch.equal(value, resumed.encoder.state_dict()[key]), key
    assert sorted(path.name for path in config.run_dir.glob("*.pt*")) == [LAST, PREVIOUS]


def test_a_run_with_only_previous_pt_is_kept_and_says_how_to_use_it(killed_states, tmp_path,
                                                                    capsys):
    config = _left_by_the_old_writer_between_its_renames(killed_states, tmp_path)
    (config.run_dir / WRITING).unlink()
    before = _content(config.run_dir)
    with pytest.raises(ValueError, match="already holds a run"):
        pretrain(config)
    assert _content(config.run_dir) == before
    with pytest.raises(FileNotFoundError, match=r"previous.pt is there; use it with "
                                                r"resume=\"previous\""):
        pretrain(config, resume="last")
    assert main(["evaluate", str(config.run_dir), "--device", "cpu", "--no-progress"]) == 2
    assert "use it with --checkpoint previous" in capsys.readouterr().err


def test_previous_pt_is_a_copy_where_the_file_system_has_no_hard_links(tmp_path, monkeypatch):
    def no_links(source, target):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(checkpoint.os, "link", no_links)
    for epoch in (1, 2, 3):
        save_checkpoint(tmp_path, {"epochs_completed": epoch})
    assert load_checkpoint(tmp_path)["epochs_completed"] == 3
    assert load_checkpoint(tmp_path, "previous")["epochs_completed"] == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == [LAST, PREVIOUS]


def test_a_sweep_resumes_a_cell_left_so_instead_of_training_it_again(killed_states, tmp_path,
                                                                     monkeypatch):
    from contrastkit.experiments import runner

    config = _left_by_the_old_writer_between_its_renames(killed_states, tmp_path)
    recovered = load_checkpoint(config.run_dir)
    real_step, steps = loop.train_step, []

    def counted(*args):
        steps.append(1)
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", counted)
    runner._train(config)
    assert len(steps) == steps_per_epoch(config) - recovered["step"]
