"""Evaluation of learned representations: linear probe, kNN, similarity statistics, LMCL's
distance measurements, K-means clustering accuracy."""

from .clustering import clustering_accuracy, kmeans_accuracy
from .embed import embed_dataset, embed_run, save_embeddings
from .features import extract_features
from .knn import knn_accuracy, knn_scores
from .linear import linear_probe, train_linear_classifier
from .metrics import topk_accuracy
from .pair_stats import augmented_pair_stats, augmented_pairs, distance_measurements
from .run import evaluate_run, measure_run, probe_run, write_results

__all__ = [
    "augmented_pair_stats",
    "augmented_pairs",
    "clustering_accuracy",
    "distance_measurements",
    "embed_dataset",
    "embed_run",
    "evaluate_run",
    "extract_features",
    "kmeans_accuracy",
    "knn_accuracy",
    "knn_scores",
    "linear_probe",
    "measure_run",
    "probe_run",
    "save_embeddings",
    "topk_accuracy",
    "train_linear_classifier",
    "write_results",
]
