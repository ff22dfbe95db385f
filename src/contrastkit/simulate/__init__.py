"""Optimization of free embeddings on the unit sphere, to watch a loss reach its theoretical
optimum (full batch, fixed mini-batches or random mini-batches), and the experiments built on it
(:mod:`.experiments`)."""

from .embeddings import SimulationResult, optimize_embeddings
from .experiments import SigmoidPhase, loss_by_name, minibatch_runs, sigmoid_phase

__all__ = ["SigmoidPhase", "SimulationResult", "loss_by_name", "minibatch_runs",
           "optimize_embeddings", "sigmoid_phase"]
