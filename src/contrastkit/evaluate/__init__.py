"""Evaluation of learned representations: linear probe, kNN (also online, while training:
``OnlineProbe``), similarity statistics, LMCL's distance measurements, K-means clustering
accuracy; image-text zero-shot classification and retrieval recall (CLIP's protocols); exact
retrieval metrics (recall, MRR, nDCG, MAP@R) of any query and corpus embeddings; hard
negatives mined from a corpus, exactly."""

from .clustering import clustering_accuracy, kmeans_accuracy
from .embed import embed_dataset, embed_run, save_embeddings
from .features import extract_features
from .knn import knn_accuracy, knn_scores
from .linear import linear_probe, train_linear_classifier
from .metrics import topk_accuracy
from .mining import MinedNegatives, mine_hard_negatives
from .online import OnlineProbe
from .pair_stats import augmented_pair_stats, augmented_pairs, distance_measurements
from .ranking import retrieval_metrics
from .relevance import Relevance
from .retrieval import chance_recalls, retrieval_ranks, retrieval_recalls
from .run import evaluate_run, measure_run, probe_run, write_results
from .text_mining import mine_run, mine_text_pairs
from .zero_shot import class_embeddings, zero_shot_accuracy, zero_shot_topk

__all__ = [
    "MinedNegatives",
    "OnlineProbe",
    "Relevance",
    "augmented_pair_stats",
    "augmented_pairs",
    "chance_recalls",
    "class_embeddings",
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
    "mine_hard_negatives",
    "mine_run",
    "mine_text_pairs",
    "probe_run",
    "retrieval_metrics",
    "retrieval_ranks",
    "retrieval_recalls",
    "save_embeddings",
    "topk_accuracy",
    "train_linear_classifier",
    "write_results",
    "zero_shot_accuracy",
    "zero_shot_topk",
]
