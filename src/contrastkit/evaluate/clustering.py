"""K-means clustering accuracy with Hungarian matching of clusters to classes (the measure of
LMCL's toy experiment, Chen et al., ICML 2021, Table 1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def clustering_accuracy(clusters: ArrayLike, labels: ArrayLike) -> float:
    """The fraction of points whose cluster is matched to their class, under the one-to-one
    matching of clusters to classes that maximizes it (the Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment``, on the cluster x class contingency table).

    >>> clustering_accuracy([1, 1, 0, 0], [0, 0, 1, 1])
    1.0
    """
    from scipy.optimize import linear_sum_assignment

    clusters, labels = _integer_array("clusters", clusters), _integer_array("labels", labels)
    if clusters.shape != labels.shape or clusters.size == 0:
        raise ValueError(f"clusters and labels must be non-empty and of one length, got "
                         f"{clusters.size} and {labels.size}")
    _, cluster_ids = np.unique(clusters, return_inverse=True)
    _, class_ids = np.unique(labels, return_inverse=True)
    table = np.zeros((cluster_ids.max() + 1, class_ids.max() + 1), dtype=np.int64)
    np.add.at(table, (cluster_ids, class_ids), 1)
    rows, columns = linear_sum_assignment(table, maximize=True)
    return float(table[rows, columns].sum() / labels.size)


def kmeans_accuracy(points: ArrayLike, labels: ArrayLike, seed: int = 0, restarts: int = 10
                    ) -> float:
    """:func:`clustering_accuracy` of K-means on ``points`` ``(n, d)`` with as many clusters as
    ``labels`` has classes (scikit-learn's ``KMeans``, k-means++ starts, the best of
    ``restarts`` runs, seeded by ``seed``)."""
    from sklearn.cluster import KMeans

    points = np.asarray(points, dtype=np.float64)
    labels = _integer_array("labels", labels)
    if points.ndim != 2 or points.shape[0] != labels.size:
        raise ValueError(f"points must have shape (n, d) with n = {labels.size} labels, got "
                         f"{points.shape}")
    if not np.isfinite(points).all():
        raise ValueError("points must be finite")
    classes = np.unique(labels).size
    model = KMeans(n_clusters=classes, n_init=restarts, random_state=seed)
    return clustering_accuracy(model.fit_predict(points), labels)


def _integer_array(name: str, values: ArrayLike) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must be a flat sequence of integers, got dtype {array.dtype} "
                         f"and shape {array.shape}")
    return array
