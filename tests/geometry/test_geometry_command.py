"""``contrastkit geometry EMBEDDINGS``: file formats, JSON, table, plot, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from contrastkit import geometry
from contrastkit.cli import main


@pytest.fixture
def views():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(40, 6))
    return np.stack([u, u + 0.5 * rng.normal(size=u.shape)]), np.arange(40) % 4


def test_two_views_npy_with_labels(tmp_path, views, capsys):
    array, labels = views
    np.save(tmp_path / "emb.npy", array)
    np.save(tmp_path / "labels.npy", labels)
    code = main(["geometry", str(tmp_path / "emb.npy"), "--labels", str(tmp_path / "labels.npy")])
    assert code == 0
    report = json.loads((tmp_path / "emb.geometry.json").read_text())
    u, v = torch.from_numpy(array[0]), torch.from_numpy(array[1])
    expected = geometry.similarity_stats(u, v, torch.from_numpy(labels)).as_dict()
    assert report["mode"] == "views" and report["pairs"] == 40
    assert report["similarity"] == pytest.approx(expected, abs=1e-12)
    assert report["alignment"] == pytest.approx(geometry.alignment(u, v))
    assert report["neural_collapse"]["num_classes"] == 4
    out = capsys.readouterr().out
    assert "negative_var" in out and "[neural_collapse]" in out


def test_pt_mapping_with_plot_and_uniformity(tmp_path, views):
    pytest.importorskip("matplotlib")
    array, labels = views
    path = tmp_path / "emb.pt"
    torch.save({"u": torch.from_numpy(array[0]), "v": torch.from_numpy(array[1])}, path)
    plot, out = tmp_path / "hist.png", tmp_path / "out.json"
    code = main(["geometry", str(path), "--plot", str(plot), "--json", str(out), "--uniformity",
                 "--bins", "10"])
    assert code == 0
    assert plot.read_bytes()[:4] == b"\x89PNG"
    report = json.loads(out.read_text())
    assert len(report["histogram"]["counts"]["negative"]) == 10
    u, v = torch.from_numpy(array[0]), torch.from_numpy(array[1])
    expected = (geometry.uniformity(u) + geometry.uniformity(v)) / 2
    assert report["uniformity"] == pytest.approx(expected)


def test_features_with_labels(tmp_path, views):
    array, labels = views
    np.savez(tmp_path / "feat.npz", features=array[0], labels=labels)
    assert main(["geometry", str(tmp_path / "feat.npz")]) == 0
    report = json.loads((tmp_path / "feat.geometry.json").read_text())
    assert report["mode"] == "features"
    z, y = torch.from_numpy(array[0]), torch.from_numpy(labels)
    expected = geometry.class_similarity_stats(z, y).as_dict()
    assert report["class_similarity"] == pytest.approx(expected)
    assert report["neural_collapse"] == pytest.approx(geometry.neural_collapse(z, y).as_dict())


@pytest.mark.parametrize(
    "content, match",
    [
        (np.zeros((3, 4, 5)), "shape"),
        (np.zeros(7), "shape"),
        ({"x": np.zeros((4, 2))}, "keys"),
    ],
)
def test_bad_files_exit_with_an_error(tmp_path, capsys, content, match):
    path = tmp_path / "bad.npz" if isinstance(content, dict) else tmp_path / "bad.npy"
    if isinstance(content, dict):
        np.savez(path, **content)
    else:
        np.save(path, content)
    assert main(["geometry", str(path)]) == 2
    assert match in capsys.readouterr().err


def test_labels_of_wrong_length(tmp_path, views, capsys):
    array, _ = views
    np.save(tmp_path / "emb.npy", array)
    np.save(tmp_path / "labels.npy", np.arange(7))
    assert main(["geometry", str(tmp_path / "emb.npy"), "--labels",
                 str(tmp_path / "labels.npy")]) == 2
    assert "labels" in capsys.readouterr().err


def test_missing_file(tmp_path, capsys):
    assert main(["geometry", str(tmp_path / "none.npy")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_help_states_the_range_of_bins(capsys):
    from contrastkit.commands.geometry import MAX_BINS

    with pytest.raises(SystemExit):
        main(["geometry", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"{MAX_BINS[0]} to {MAX_BINS[1]}" in help_text


@pytest.mark.parametrize("suffix, dtype", [
    (".npy", "complex128"), (".npz", "complex64"), (".pt", "torch.complex64"),
])
def test_complex_embeddings_are_refused_naming_the_file_and_dtype(tmp_path, capsys, views,
                                                                  suffix, dtype):
    """A complex array was read, its imaginary part dropped, and reported (exit 0)."""
    array = views[0] + 1j * views[0][::-1]
    path = tmp_path / f"emb{suffix}"
    if suffix == ".npy":
        np.save(path, array)
    elif suffix == ".npz":
        np.savez(path, features=array[0].astype(np.complex64))
    else:
        torch.save({"u": torch.from_numpy(array[0]).to(torch.complex64),
                    "v": torch.from_numpy(views[0][1])}, path)
    with pytest.raises(ValueError, match=f"{path}.* {dtype}.*real"):
        geometry.load_embeddings(path)
    assert main(["geometry", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and dtype in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "emb.geometry.json").exists()


def test_text_arrays_are_refused_naming_the_file_and_dtype(tmp_path, capsys):
    path = tmp_path / "words.npy"
    np.save(path, np.array([["a", "b"], ["c", "d"]]))
    assert main(["geometry", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "<U1" in err and len(err.strip().splitlines()) == 1


def test_two_views_report_the_false_negatives_of_a_loop_over_the_pairs(tmp_path, capsys):
    """Anchors and positives with planted ties (copies of a positive) and their duplicate ids
    in the file, labels beside it, the run's dataset and batch size for the band: the report's
    false negatives are the loop's."""
    from contrastkit.theory import negative_similarity_band
    from tests.geometry.false_negative_reference import lattice_batch, reference

    u, v, duplicates = lattice_batch(12, 8, torch.Generator().manual_seed(0), duplicated=3)
    labels = np.arange(12) % 3
    np.savez(tmp_path / "pairs.npz", u=u.numpy(), v=v.numpy(), duplicates=duplicates.numpy())
    np.save(tmp_path / "labels.npy", labels)
    assert main(["geometry", str(tmp_path / "pairs.npz"), "--labels",
                 str(tmp_path / "labels.npy"), "--dataset-size", "500", "--batch-size",
                 "64"]) == 0
    report = json.loads((tmp_path / "pairs.geometry.json").read_text())["false_negatives"]
    band = negative_similarity_band(500, 64)
    expected = reference([(u, v)], [band.high], [torch.from_numpy(labels)], [duplicates])
    assert report == pytest.approx(expected | {"theory_negative_band_low": band.low,
                                               "theory_negative_band_high": band.high},
                                   abs=1e-15)
    assert expected["negatives_above_positive_duplicate"] >= 6  # the copies tie
    assert "[false_negatives]" in capsys.readouterr().out
    np.savez(tmp_path / "dup.npz", u=u.numpy(), v=v.numpy())
    np.save(tmp_path / "dup.npy", duplicates.numpy())
    assert main(["geometry", str(tmp_path / "dup.npz"), "--duplicates",
                 str(tmp_path / "dup.npy")]) == 0
    report = json.loads((tmp_path / "dup.geometry.json").read_text())["false_negatives"]
    assert report == pytest.approx(reference([(u, v)], duplicates=[duplicates]), abs=1e-15)


@pytest.mark.parametrize("arguments, message", [
    (["--dataset-size", "500"], "--dataset-size needs --batch-size too"),
    (["--batch-size", "64"], "--batch-size needs --dataset-size too"),
    (["--dataset-size", "50", "--batch-size", "64"],
     "--batch-size must be at least 2 and at most --dataset-size (50), got 64"),
    (["--dataset-size", "50", "--batch-size", "1"], "--batch-size must be at least 2"),
])
def test_bad_band_options_are_one_line_errors(tmp_path, capsys, views, arguments, message):
    np.save(tmp_path / "emb.npy", views[0])
    assert main(["geometry", str(tmp_path / "emb.npy"), *arguments]) != 0
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "emb.geometry.json").exists()


def test_false_negative_options_need_two_views(tmp_path, capsys, views):
    np.save(tmp_path / "feat.npy", views[0][0])
    np.save(tmp_path / "dup.npy", np.arange(40))
    assert main(["geometry", str(tmp_path / "feat.npy"), "--duplicates",
                 str(tmp_path / "dup.npy")]) != 0
    err = capsys.readouterr().err
    assert "need two views" in err and len(err.strip().splitlines()) == 1


def test_duplicates_of_wrong_length(tmp_path, capsys, views):
    np.save(tmp_path / "emb.npy", views[0])
    np.save(tmp_path / "dup.npy", np.arange(5))
    assert main(["geometry", str(tmp_path / "emb.npy"), "--duplicates",
                 str(tmp_path / "dup.npy")]) != 0
    assert "duplicates must have one entry per row (40 rows)" in capsys.readouterr().err
