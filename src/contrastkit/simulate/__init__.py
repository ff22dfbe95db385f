"""Optimization of free embeddings on the unit sphere, to watch a loss reach its theoretical
optimum (full batch, fixed mini-batches or random mini-batches)."""

from .embeddings import SimulationResult, optimize_embeddings

__all__ = ["SimulationResult", "optimize_embeddings"]
