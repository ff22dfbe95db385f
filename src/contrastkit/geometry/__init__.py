"""Diagnostics of the geometry of embeddings.

- similarity statistics of positive, negative and within-view pairs (paper Def. 4.1), with a
  same-class / different-class split: :func:`similarity_stats`, :func:`class_similarity_stats`,
  and :class:`SimilarityAccumulator` for a stream of batches;
- alignment and uniformity (Wang & Isola) and the paper's eq. (5): :func:`alignment`,
  :func:`uniformity`, :func:`uniformity_approximation`;
- neural and dimensional collapse: :func:`neural_collapse`, :func:`effective_rank`,
  :func:`singular_spectrum`, :func:`class_mean_spectrum`, :func:`nearest_class_mean_accuracy`;
- false negatives: the in-batch negatives that score at or above their anchor's positive, or
  above the theory's band, with their same-class and duplicate pairs: :func:`false_negative_stats`;
- histograms: :func:`similarity_histogram`, :func:`plot_similarity_histogram` (matplotlib);
  the share of pairs inside LMCL's margin band: :func:`margin_fraction`;
- measuring a model with the paper's Table 1 protocol: :func:`measure`,
  :class:`SimilarityMonitor`;
- saved embeddings: :func:`load_embeddings`, :func:`load_labels`, and :func:`diagnose`, every
  diagnostic that applies as one report (``contrastkit geometry``), :func:`plot_histogram`.
"""

from .alignment import alignment, uniformity, uniformity_approximation
from .collapse import (
    NeuralCollapseMetrics,
    class_mean_spectrum,
    class_means,
    effective_rank,
    nearest_class_mean_accuracy,
    neural_collapse,
    singular_spectrum,
)
from .diagnose import diagnose, plot_histogram
from .embedding_files import load_embeddings, load_labels
from .false_negatives import false_negative_stats
from .histogram import SimilarityHistogram, plot_similarity_histogram, similarity_histogram
from .margin import margin_fraction
from .measure import Measurement, SimilarityMonitor, measure, measure_embeddings
from .similarity_stats import (
    ClassSimilarityStats,
    SimilarityAccumulator,
    SimilarityStats,
    class_similarity_stats,
    similarity_stats,
)

__all__ = [
    "ClassSimilarityStats",
    "Measurement",
    "NeuralCollapseMetrics",
    "SimilarityHistogram",
    "SimilarityAccumulator",
    "SimilarityMonitor",
    "SimilarityStats",
    "alignment",
    "class_mean_spectrum",
    "class_means",
    "class_similarity_stats",
    "diagnose",
    "effective_rank",
    "false_negative_stats",
    "margin_fraction",
    "load_embeddings",
    "load_labels",
    "measure",
    "measure_embeddings",
    "nearest_class_mean_accuracy",
    "neural_collapse",
    "plot_histogram",
    "plot_similarity_histogram",
    "similarity_histogram",
    "similarity_stats",
    "singular_spectrum",
    "uniformity",
    "uniformity_approximation",
]
