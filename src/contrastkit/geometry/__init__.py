"""Diagnostics of the geometry of embeddings: similarity statistics and more."""

from .similarity import SimilarityStats, similarity_stats

__all__ = ["SimilarityStats", "similarity_stats"]
