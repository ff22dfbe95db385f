"""All the diagnostics that apply to a set of embeddings, as one JSON-ready report (what
``contrastkit geometry`` prints), and their similarity histogram."""

from __future__ import annotations

from pathlib import Path

import torch

from .alignment import alignment, uniformity, uniformity_approximation
from .collapse import effective_rank, nearest_class_mean_accuracy, neural_collapse
from .false_negatives import false_negative_stats
from .histogram import plot_similarity_histogram, similarity_histogram
from .similarity_stats import class_similarity_stats, similarity_stats


def diagnose(data: dict, method: str = "auto", with_uniformity: bool = False,
             dataset_size: int | None = None, batch_size: int | None = None) -> dict:
    """All diagnostics that apply to ``data`` (as :func:`~.embedding_files.load_embeddings`
    returns: ``{"u", "v"}`` or ``{"features"}``, optionally ``"labels"``, and for two views
    ``"duplicates"``) as one JSON-ready dict: similarity statistics (Def. 4.1, with the
    same/different-class split given labels), alignment and uniformity (its eq. (5)
    approximation, and the exact value when ``with_uniformity``), for two views the
    false-negative statistics (:func:`~.false_negatives.false_negative_stats`, with the
    theory's band for ``dataset_size`` and ``batch_size`` when given, which then need two
    views), effective rank, and given labels the neural-collapse metrics and the
    nearest-class-mean accuracy."""
    labels = data.get("labels")
    if "u" not in data and (dataset_size, batch_size, data.get("duplicates")) != (None,) * 3:
        raise ValueError("the false-negative statistics (dataset_size, batch_size, "
                         "duplicates) need two views, anchors and their positives; these "
                         "embeddings are one set of features")
    if "u" in data:
        u, v = data["u"].double(), data["v"].double()
        stats = similarity_stats(u, v, labels, method=method)
        report = {
            "mode": "views",
            "pairs": u.shape[0],
            "dim": u.shape[1],
            "similarity": stats.as_dict(),
            "alignment": alignment(u, v),
            "uniformity_eq5": uniformity_approximation(
                stats.negative_mean, stats.negative_var
            ),
        }
        if with_uniformity:
            report["uniformity"] = (uniformity(u) + uniformity(v)) / 2
        report["false_negatives"] = false_negative_stats(
            u, v, dataset_size=dataset_size, batch_size=batch_size, labels=labels,
            duplicates=data.get("duplicates"))
        features = torch.cat([u, v])
        feature_labels = None if labels is None else torch.cat([labels, labels])
    else:
        features = data["features"].double()
        feature_labels = labels
        report = {"mode": "features", "samples": features.shape[0], "dim": features.shape[1]}
        if labels is not None:
            report["class_similarity"] = class_similarity_stats(
                features, labels, method=method
            ).as_dict()
        if with_uniformity:
            report["uniformity"] = uniformity(features)
    report["effective_rank"] = effective_rank(features)
    if feature_labels is not None:
        report["neural_collapse"] = neural_collapse(features, feature_labels).as_dict()
        report["nearest_class_mean_accuracy"] = nearest_class_mean_accuracy(
            features, feature_labels
        )
    return report


def plot_histogram(data: dict, path: Path, bins: int = 50, distance: bool = False) -> dict:
    """Write the similarity (``distance=True``: LMCL distance) histogram of ``data`` to the
    PNG ``path``; return the histogram as a dict."""
    scale = "distance" if distance else "similarity"
    if "u" in data:
        histogram = similarity_histogram(
            data["u"], data["v"], data.get("labels"), bins=bins, scale=scale
        )
    else:
        histogram = similarity_histogram(
            data["features"], None, data.get("labels"), bins=bins, scale=scale
        )
    plot_similarity_histogram(histogram, path)
    return histogram.as_dict()
