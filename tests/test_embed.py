"""``contrastkit embed``: a run's backbone features, projector outputs and labels of a split, in
the file format ``contrastkit geometry`` reads; the Python API for runs of the user's own
objects; clear errors and no partial files."""

import json

import numpy as np
import pytest
import torch

from contrastkit.cli import main
from contrastkit.data import load_dataset
from contrastkit.evaluate import embed_run, extract_features, measure_run
from contrastkit.models import build_encoder
from contrastkit.train import load_checkpoint, pretrain
from tests.rows_close import assert_rows_close
from tests.train.own_objects import Blobs, jitter, mlp
from tests.train.test_own_inputs import config as own_config
from tests.train.tiny import tiny_config


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return pretrain(tiny_config(tmp_path_factory.mktemp("embed"), epochs=1)).run_dir


@pytest.fixture(scope="module")
def own_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("own")
    return pretrain(own_config(root, epochs=1), encoder=mlp(), dataset=Blobs(),
                    augment=jitter)


def reference(run_dir, split):
    """The checkpoint's encoder, rebuilt by hand, over the split: (features, outputs, labels)."""
    state = load_checkpoint(run_dir)
    settings = state["config"]
    dataset = load_dataset(settings["dataset"], split)
    info = dataset.info
    encoder = build_encoder(settings["backbone"], info.channels, info.mean, info.std,
                            settings["projector_hidden"], settings["projector_out"])
    encoder.load_state_dict(state["model"])
    features, labels = extract_features(encoder, dataset)
    outputs, _ = extract_features(encoder, dataset, projector=True)
    return features, outputs, labels


def test_embed_writes_the_split_s_features_projector_outputs_and_labels(run_dir, capsys):
    assert main(["embed", str(run_dir), "--split", "test", "--no-progress"]) == 0
    path = run_dir / "embeddings-test.npz"
    assert str(path) in capsys.readouterr().out
    features, outputs, labels = reference(run_dir, "test")
    with np.load(path) as saved:
        assert sorted(saved.files) == ["embeddings", "features", "labels"]
        # embed runs on the GPU where there is one, the reference on the CPU
        assert_rows_close(saved["features"], features.numpy())
        assert_rows_close(saved["embeddings"], outputs.numpy())
        np.testing.assert_array_equal(saved["labels"], labels.numpy())
        assert saved["labels"].dtype == np.int64 and saved["features"].dtype == np.float32


def test_a_npy_file_holds_the_projector_outputs(run_dir, tmp_path):
    out = tmp_path / "deep" / "z.npy"
    assert main(["embed", str(run_dir), "--out", str(out), "--no-progress"]) == 0
    _, outputs, _ = reference(run_dir, "train")
    assert_rows_close(np.load(out), outputs.numpy())


@pytest.mark.parametrize("name", ["e.npz", "e.npy"])
def test_geometry_reads_what_embed_writes(run_dir, tmp_path, name, capsys):
    out = tmp_path / name
    assert main(["embed", str(run_dir), "--split", "test", "--out", str(out),
                 "--no-progress"]) == 0
    assert main(["geometry", str(out), "--json", str(tmp_path / "g.json")]) == 0
    report = json.loads((tmp_path / "g.json").read_text())
    features, outputs, _ = reference(run_dir, "test")
    expected = features if name.endswith(".npz") else outputs
    assert (report["samples"], report["dim"]) == tuple(expected.shape)
    assert ("class_similarity" in report) == name.endswith(".npz")


def test_own_objects_are_embedded_through_the_python_api(own_run, tmp_path):
    encoder = mlp(seed=5)  # other weights: the checkpoint's are loaded
    path = embed_run(own_run.run_dir, out=tmp_path / "own.npz", progress=False,
                     encoder=encoder, dataset=Blobs())
    data = Blobs()  # float samples: used as they are, not divided by 255
    with torch.no_grad():
        outputs = own_run.encoder.eval()(data.points)
    with np.load(path) as saved:
        np.testing.assert_allclose(saved["embeddings"], outputs.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(saved["features"], saved["embeddings"])
        np.testing.assert_array_equal(saved["labels"], data.labels.numpy())
    unlabeled = embed_run(own_run.run_dir, out=tmp_path / "u.npz", progress=False,
                          encoder=encoder, dataset=Blobs(labeled=False))
    with np.load(unlabeled) as saved:
        assert sorted(saved.files) == ["embeddings", "features"]


def test_the_commands_refuse_a_run_of_own_objects_in_one_line(own_run, capsys):
    for command in (["embed", str(own_run.run_dir)], ["evaluate", str(own_run.run_dir)]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "own encoder" in err[0] and "cannot rebuild" in err[0]
    assert not list(own_run.run_dir.glob("embeddings*")) + list(own_run.run_dir.glob("eval*"))
    with pytest.raises(ValueError, match="contrastkit evaluate cannot rebuild"):
        measure_run(own_run.run_dir, progress=False)


def test_a_mismatched_encoder_is_named(own_run, tmp_path):
    with pytest.raises(ValueError, match="encoder does not match the checkpoint"):
        embed_run(own_run.run_dir, out=tmp_path / "x.npz", progress=False,
                  encoder=mlp(out=4), dataset=Blobs())
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, fragments", [
    (["{tmp}/none"], ("does not exist", "none")),
    (["{run}", "--out", "{tmp}/e.txt"], ("e.txt", ".npz", ".npy")),
    (["{run}", "--out", "{tmp}/afile/e.npz"], ("--out", "afile")),
])
def test_bad_input_is_one_line_and_leaves_no_file(run_dir, tmp_path, monkeypatch, capsys,
                                                  args, fragments):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    (tmp_path / "afile").write_text("a file\n")
    before = sorted(run_dir.iterdir())
    argv = ["embed", *(a.format(tmp=tmp_path, run=run_dir) for a in args)]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert 1 <= len(err) <= 2 and "Traceback" not in "".join(err)
    for fragment in fragments:
        assert fragment in err[-1]
    assert sorted(tmp_path.iterdir()) == [tmp_path / "afile"]
    assert sorted(run_dir.iterdir()) == before


def test_overwrite_removes_a_run_s_embeddings_and_keeps_other_files(tmp_path):
    from contrastkit.train.run_folder import start_run_dir

    config = tiny_config(tmp_path)
    config.run_dir.mkdir()
    for name in ("last.pt", "embeddings-train.npz", "embeddings-test.npz", "mine.npz"):
        (config.run_dir / name).write_bytes(b"old")
    start_run_dir(config, overwrite=True, is_main=True)
    assert sorted(p.name for p in config.run_dir.iterdir()) == ["config.yaml", "mine.npz"]
