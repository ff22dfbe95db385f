"""A NaN in the user's own data is named as such (the dataset items, the batch rows, the epoch
and the step, what to do), and a run that fails that way leaves no run folder without a
checkpoint behind."""

import math

import pytest

from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.stopping import NonFiniteData, non_finite_rows
from tests.train.own_objects import Blobs, jitter, mlp


def blobs_config(tmp_path, **changes) -> PretrainConfig:
    settings = {"runs_dir": str(tmp_path), "name": "blobs", "epochs": 2, "batch_size": 64,
                "warmup_epochs": 1, "vrns": 0.0, "device": "cpu", "progress": False}
    return PretrainConfig(**(settings | changes))


def test_non_finite_rows_names_the_rows_of_a_float_batch():
    import torch

    batch = torch.zeros(4, 2, 3)
    batch[1, 0, 2], batch[3, 1, 1] = math.nan, math.inf
    assert non_finite_rows(batch) == [1, 3]
    assert non_finite_rows(torch.zeros(4, 3, dtype=torch.uint8)) == []


def test_a_nan_in_the_first_epoch_names_the_item_and_leaves_no_run_folder(tmp_path):
    """Item 100 of 256 holds a NaN: the run stops in epoch 1 at the step whose batch holds it,
    naming the item, its row, the step and the epoch; with no checkpoint yet, the run folder
    is removed (it was the run's own)."""
    data = Blobs()
    data.points[100, 3] = math.nan
    config = blobs_config(tmp_path)
    with pytest.raises(NonFiniteData) as error:
        pretrain(config, encoder=mlp(), dataset=data, augment=jitter)
    message = str(error.value)
    assert message.startswith("the training data contains non-finite values (NaN or "
                              "infinity): dataset item 100, row ")
    assert error.value.items == [100] and error.value.epoch == 1
    assert f"of the 64 of the batch of step {error.value.step}/4 of epoch 1" in message
    assert "no checkpoint yet" in message and "Fix or drop those items" in message
    assert "u contains NaN" not in message
    assert not config.run_dir.exists()


def test_a_nan_after_a_checkpoint_keeps_the_checkpoints_and_the_folder(tmp_path):
    """A NaN that first appears in epoch 2 (the data change between epochs): the run stops
    naming epoch 2; the checkpoint of epoch 1 and the folder are kept."""
    data = Blobs()

    def spoil(epochs_completed, metrics):
        data.points[7, 0] = math.inf

    config = blobs_config(tmp_path)
    with pytest.raises(NonFiniteData, match=r"dataset item 7, .* of epoch 2, .*checkpoints in "
                                            r".* are from before"):
        pretrain(config, encoder=mlp(), dataset=data, augment=jitter, callbacks=[spoil])
    assert load_checkpoint(config.run_dir)["epochs_completed"] == 1


def test_a_folder_with_the_users_own_files_keeps_them(tmp_path):
    data = Blobs()
    data.points[5, 0] = math.nan
    config = blobs_config(tmp_path)
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "notes.txt").write_text("mine")
    with pytest.raises(NonFiniteData):
        pretrain(config, encoder=mlp(), dataset=data, augment=jitter)
    assert sorted(p.name for p in config.run_dir.iterdir()) == ["notes.txt"]
