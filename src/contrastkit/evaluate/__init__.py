"""Evaluation of learned representations: linear probe, kNN, similarity statistics."""

from .features import extract_features
from .knn import knn_accuracy, knn_scores
from .linear import linear_probe, train_linear_classifier
from .metrics import topk_accuracy
from .pair_stats import augmented_pair_stats
from .run import evaluate_run, measure_run, write_results

__all__ = [
    "augmented_pair_stats",
    "evaluate_run",
    "extract_features",
    "knn_accuracy",
    "knn_scores",
    "linear_probe",
    "measure_run",
    "topk_accuracy",
    "train_linear_classifier",
    "write_results",
]
