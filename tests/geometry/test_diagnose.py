"""The library functions behind ``contrastkit geometry``: reading saved embeddings and the
one-report diagnosis, called from Python."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contrastkit import geometry
from tests.conftest import random_views


def test_saved_views_with_labels_are_read_and_diagnosed_as_the_functions_compute(tmp_path):
    u, v = random_views(12, 5)
    labels = torch.arange(12) % 3
    np.savez(tmp_path / "views.npz", u=u.numpy(), v=v.numpy(), labels=labels.numpy())
    data = geometry.load_embeddings(tmp_path / "views.npz")
    assert set(data) == {"u", "v", "labels"} and torch.equal(data["labels"], labels)
    report = geometry.diagnose(data)
    assert report["mode"] == "views" and report["pairs"] == 12 and report["dim"] == 5
    assert report["similarity"] == geometry.similarity_stats(u, v, labels).as_dict()
    assert report["alignment"] == pytest.approx(geometry.alignment(u, v))
    features, doubled = torch.cat([u, v]), torch.cat([labels, labels])
    assert report["effective_rank"] == pytest.approx(geometry.effective_rank(features))
    assert report["neural_collapse"] == geometry.neural_collapse(features, doubled).as_dict()


def test_features_without_labels_get_the_label_free_diagnostics(tmp_path):
    features, _ = random_views(10, 4)
    torch.save({"features": features}, tmp_path / "features.pt")
    report = geometry.diagnose(geometry.load_embeddings(tmp_path / "features.pt"),
                               with_uniformity=True)
    assert report["mode"] == "features" and "neural_collapse" not in report
    assert report["uniformity"] == pytest.approx(geometry.uniformity(features))


def test_a_histogram_is_written_and_returned(tmp_path):
    u, v = random_views(8, 3)
    histogram = geometry.plot_histogram({"u": u, "v": v}, tmp_path / "h.png", bins=10)
    assert (tmp_path / "h.png").stat().st_size > 0 and len(histogram["edges"]) == 11
