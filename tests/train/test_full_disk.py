"""A disk that fills while torch writes a checkpoint: torch turns the ``ENOSPC`` of the file's
``write`` into ``RuntimeError: [enforce fail at inline_container.cc:...] unexpected pos``, with
the ``OSError`` only as its context. The run still stops with one line saying the disk is full,
keeps both checkpoints, and under torch.distributed every process stops at the same checkpoint
with that line (rank 0 alone writes; the others used to go on into the next collective)."""

from __future__ import annotations

import errno
import io
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit.cli import main
from contrastkit.train import RunFolderError, load_checkpoint, pretrain, save_checkpoint
from tests.ports import free_port
from tests.train.tiny import tiny_config

REAL_SAVE = torch.save


class _FillsUp(io.RawIOBase):
    """A file handle on a disk with ``room`` bytes left: the write that does not fit raises
    ``ENOSPC``, as a full file system's ``write(2)`` does."""

    def __init__(self, handle, room: int) -> None:
        self.handle, self.room = handle, room

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)


def save_on_a_full_disk(state, handle, *args, **kwargs):
    """``torch.save``, with the checkpoint file's disk full after 1 000 bytes (the real torch
    writer runs, so the error is the one torch raises; in-memory saves are left alone)."""
    if getattr(handle, "name", "").endswith(".last.pt.tmp"):
        return REAL_SAVE(state, _FillsUp(handle, 1000), *args, **kwargs)
    return REAL_SAVE(state, handle, *args, **kwargs)


def test_torch_raises_a_runtime_error_for_a_full_disk(tmp_path):
    """What this file is about (so that the simulation stays faithful to torch)."""
    with open(tmp_path / ".last.pt.tmp", "wb") as handle, pytest.raises(
            RuntimeError, match="inline_container") as caught:
        save_on_a_full_disk({"weights": torch.randn(10_000)}, handle)
    assert isinstance(caught.value.__context__, OSError)


def test_a_checkpoint_that_fills_the_disk_is_a_run_folder_error_and_keeps_both(
        tmp_path, monkeypatch):
    save_checkpoint(tmp_path, {"epoch": 4})
    save_checkpoint(tmp_path, {"epoch": 5})
    monkeypatch.setattr(torch, "save", save_on_a_full_disk)
    with pytest.raises(RunFolderError, match=r"cannot write checkpoint .*last.pt: the disk is "
                                             r"full$"):
        save_checkpoint(tmp_path, {"epoch": 6, "weights": torch.randn(10_000)})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt", "previous.pt"]
    assert load_checkpoint(tmp_path)["epoch"] == 5
    assert load_checkpoint(tmp_path, "previous")["epoch"] == 4


def test_pretrain_on_a_disk_that_fills_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch, "save", save_on_a_full_disk)
    code = main(["pretrain", f"runs_dir={tmp_path}", "name=full", "epochs=1", "batch_size=128",
                 "projector_hidden=32", "progress=false", "device=cpu"])
    error = capsys.readouterr().err
    assert code == 1, error  # the file system's fault, as the README says, not bad input (2)
    assert error.strip() == (f"contrastkit pretrain: error: cannot write checkpoint "
                             f"{tmp_path / 'full' / 'last.pt'}: the disk is full")
    assert not list((tmp_path / "full").glob(".*.tmp"))


def _worker(rank: int, world_size: int, port: int, config, fail_at_epoch: int, out) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "RANK": str(rank), "LOCAL_RANK": str(rank),
                       "WORLD_SIZE": str(world_size)})
    torch.set_num_threads(1)
    saves = {"count": 0}

    def save(state, handle, *args, **kwargs):
        if getattr(handle, "name", "").endswith(".last.pt.tmp"):
            saves["count"] += 1
            if saves["count"] >= fail_at_epoch:
                return save_on_a_full_disk(state, handle, *args, **kwargs)
        return REAL_SAVE(state, handle, *args, **kwargs)

    torch.save = save
    try:
        pretrain(config)
        message = "finished"
    except RunFolderError as error:
        message = f"RunFolderError: {error}"
    except Exception as error:  # noqa: BLE001 - the test reports what each rank raised
        message = f"{type(error).__name__}: {error}"
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    (out / f"rank{rank}.txt").write_text(message)


@pytest.mark.slow
def test_under_ddp_every_process_stops_at_the_checkpoint_rank_0_could_not_write(tmp_path):
    config = tiny_config(tmp_path, epochs=3, batch_size=256)
    context = mp.start_processes(_worker, args=(2, free_port(), config, 2, tmp_path), nprocs=2,
                                 join=False, start_method="spawn")
    for _ in range(240):  # a hang is the fault: do not wait for ever
        if context.join(timeout=1):
            break
    else:
        for process in context.processes:
            process.kill()
        pytest.fail("a process hung after rank 0 could not write its checkpoint")
    expected = (f"RunFolderError: cannot write checkpoint {config.run_dir / 'last.pt'}: the "
                f"disk is full")
    assert (tmp_path / "rank0.txt").read_text() == expected
    assert (tmp_path / "rank1.txt").read_text() == expected + " (in process 0)"
    assert load_checkpoint(config.run_dir)["epochs_completed"] == 1
