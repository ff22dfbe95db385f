"""pretrain() with the user's own encoder, dataset and augmentation: trained, recorded in the
config, resumed exactly when given again, and bad objects refused before the run folder exists."""

import pytest
import torch
from torch import nn
from torch.utils.data import IterableDataset, TensorDataset

from contrastkit.train import PretrainConfig, load_checkpoint, pretrain
from contrastkit.train.inputs import type_name
from contrastkit.yaml_files import read_yaml
from tests.train.own_objects import Blobs, jitter, mlp


def config(tmp_path, **changes) -> PretrainConfig:
    settings = {"runs_dir": str(tmp_path), "name": "own", "batch_size": 64, "epochs": 3,
                "warmup_epochs": 1, "vrns": 0.0, "device": "cpu", "progress": False}
    settings.update(changes)
    return PretrainConfig(**settings)


class Killed(Exception):
    pass


def kill_after_first_epoch(completed, metrics):
    if completed == 1:
        raise Killed


def test_own_objects_train_and_are_recorded_in_the_run_config(tmp_path):
    encoder = mlp()
    result = pretrain(config(tmp_path), encoder=encoder, dataset=Blobs(), augment=jitter)
    assert result.encoder is encoder
    assert len(result.history) == 3
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    saved = read_yaml(result.run_dir / "config.yaml", "config")
    assert saved["user_encoder"] == type_name(encoder) == "torch.nn.modules.container.Sequential"
    assert saved["user_dataset"] == "tests.train.own_objects.Blobs"
    assert saved["user_augment"] == "tests.train.own_objects.jitter"
    assert load_checkpoint(result.run_dir)["config"]["user_dataset"] == saved["user_dataset"]


def test_a_run_of_own_objects_resumed_with_them_again_matches_the_uninterrupted_run(tmp_path):
    whole = pretrain(config(tmp_path / "whole"), encoder=mlp(), dataset=Blobs(), augment=jitter)
    run = config(tmp_path / "cut")
    with pytest.raises(Killed):
        pretrain(run, callbacks=[kill_after_first_epoch], encoder=mlp(), dataset=Blobs(),
                 augment=jitter)
    resumed = pretrain(run, resume="last", encoder=mlp(seed=7), dataset=Blobs(),
                       augment=jitter)
    expected = whole.encoder.state_dict()
    for key, value in resumed.encoder.state_dict().items():
        assert torch.equal(value, expected[key]), key


def test_resuming_without_the_own_objects_says_to_pass_them(tmp_path):
    run = config(tmp_path)
    with pytest.raises(Killed):
        pretrain(run, callbacks=[kill_after_first_epoch], encoder=mlp(), dataset=Blobs(),
                 augment=jitter)
    with pytest.raises(ValueError, match=r"own encoder .*pass the same object as "
                                         r"pretrain\(\.\.\., encoder=\.\.\.\)"):
        pretrain(run, resume="last")
    with pytest.raises(ValueError, match=r"own augment \(tests\.train\.own_objects\.jitter\)"):
        pretrain(run, resume="last", encoder=mlp(), dataset=Blobs())


def test_a_config_naming_an_own_object_not_given_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"user_dataset=mine.*pretrain\(\.\.\., dataset="):
        pretrain(config(tmp_path, user_dataset="mine"))
    assert not (tmp_path / "own").exists()


class Stream(IterableDataset):
    def __iter__(self):
        yield torch.zeros(3)


class Flatten3d(nn.Module):
    def forward(self, batch):
        return batch.unsqueeze(1)


def shrink(batch, generator):
    return batch[:, :8]


@pytest.mark.parametrize("objects, settings, fragments", [
    ({"dataset": Blobs(size=40)}, {}, ("40 samples", "batch_size=64")),
    ({"encoder": Flatten3d()}, {}, ("encoder", "(2, d)", "(2, 1, 16)")),
    ({"augment": shrink}, {}, ("augment", "shape", "(2, 16)", "(2, 8)")),
    ({"augment": None}, {}, ("built-in augmentation", "float32", "(16,)", "augment=")),
    ({"encoder": None}, {}, ("built-in backbone", "(16,)", "encoder=")),
    ({"dataset": Stream()}, {}, ("map-style", "Stream")),
    ({"dataset": TensorDataset(torch.arange(128).view(64, 2))}, {}, ("uint8", "int64")),
    ({"dataset": Blobs(labeled=False)}, {"loss": "supcon"}, ("supcon", "labels")),
    ({}, {"backbone": "resnet18"}, ("backbone=resnet18", "ignored")),
    ({"encoder": lambda batch: batch}, {}, ("encoder", "nn.Module", "function")),
    ({"augment": "noise"}, {}, ("augment", "callable", "str")),
])
def test_bad_own_objects_are_refused_before_the_run_folder_exists(tmp_path, objects, settings,
                                                                  fragments):
    given = {"encoder": mlp(), "dataset": Blobs(), "augment": jitter, **objects}
    with pytest.raises(ValueError) as error:
        pretrain(config(tmp_path, **settings), **given)
    for fragment in fragments:
        assert fragment in str(error.value)
    assert not (tmp_path / "own").exists()


class Recorder:
    """An augmentation that keeps the batches it is given."""

    def __init__(self):
        self.batches = []

    def __call__(self, batch, generator):
        self.batches.append(batch.clone())
        return jitter(batch, generator)


def test_float_samples_are_used_as_they_are_and_uint8_ones_divided_by_255(tmp_path):
    generator = torch.Generator().manual_seed(0)
    values = 10 * torch.rand(64, 16, generator=generator)
    pixels = torch.randint(0, 256, (64, 16), generator=generator, dtype=torch.uint8)
    for name, data, expected in (("float", values, values),
                                 ("uint8", pixels, pixels.double() / 255)):
        augment = Recorder()
        pretrain(config(tmp_path, name=name, epochs=1, batch_size=64),
                 encoder=mlp(), dataset=TensorDataset(data), augment=augment)
        seen = torch.cat(augment.batches[2:])  # after the checks' probe batch
        assert seen.shape == (128, 16)
        rows = {tuple(row.tolist()) for row in expected.float()}
        assert {tuple(row.tolist()) for row in seen} <= rows


def test_own_uint8_images_train_with_the_built_in_encoder_and_augmentation(tmp_path):
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (64, 1, 8, 8), generator=generator, dtype=torch.uint8)
    labels = torch.arange(64) % 2
    result = pretrain(config(tmp_path, epochs=1, batch_size=32, projector_hidden=16,
                             projector_out=8), dataset=TensorDataset(images, labels))
    saved = read_yaml(result.run_dir / "config.yaml", "config")
    assert (saved["user_encoder"], saved["user_augment"]) == ("", "")
    assert saved["user_dataset"] == "torch.utils.data.dataset.TensorDataset"
    assert result.encoder.features(images[:4].float() / 255).shape == (4, 128)


def _noise(batch, generator):
    return batch + torch.randn(batch.shape, generator=generator, dtype=batch.dtype)


def test_each_process_augments_its_share_with_a_stream_of_its_own():
    """Under torch.distributed every process holds the run's generator in the same state: an
    own augmentation must still draw differently on each process, the same on a rerun from the
    same state (a resume), and the run's generator must advance alike on every process."""
    from contrastkit.train.inputs import two_views

    batch = torch.zeros(4, 3)
    shares = {}
    for rank in (0, 1):
        shared = torch.Generator().manual_seed(5)
        shares[rank] = two_views(_noise, batch, shared, 8, slice(4 * rank, 4 * rank + 4))
        shares[rank, "after"] = torch.randint(2**30, (), generator=shared)
    assert not torch.equal(shares[0][0], shares[1][0])
    assert not torch.equal(shares[0][0], shares[0][1])
    assert shares[0, "after"] == shares[1, "after"]
    again = two_views(_noise, batch, torch.Generator().manual_seed(5), 8, slice(4, 8))
    assert all(torch.equal(a, b) for a, b in zip(again, shares[1], strict=True))
    alone = two_views(_noise, batch, torch.Generator().manual_seed(5), 4, slice(0, 4))
    direct = torch.Generator().manual_seed(5)
    assert torch.equal(alone[0], _noise(batch, direct))
