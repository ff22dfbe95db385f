"""The papers' theory as code: closed forms, bounds and optimal geometries (numpy / scipy)."""

from .constructions import antipodal, ccem, minibatch_optimum, simplex_etf
from .excessive_separation import excessive_separation, sigmoid_excessive_separation
from .hard_negatives import hard_negative_losses, scl_lower_bound, ucl_lower_bound
from .sigmoid import (
    SigmoidOptimum,
    SigmoidThresholds,
    infonce_ccem_minimum,
    sigmoid_optimum,
    sigmoid_thresholds,
)
from .sigmoid_phase import PHASE_REGIMES, phase_point, phase_regions
from .similarity_bounds import (
    AlignmentIdentity,
    NegativeBand,
    VarianceBounds,
    alignment_identity,
    lmcl_mean_distance_ceiling,
    minibatch_variance_bounds,
    negative_similarity_band,
    positive_similarity_ceiling,
    tight_positive_similarity_ceiling,
)
from .similarity_gradients import SIMILARITY_GRADIENT_LOSSES, similarity_gradient

__all__ = [
    "PHASE_REGIMES",
    "SIMILARITY_GRADIENT_LOSSES",
    "AlignmentIdentity",
    "NegativeBand",
    "SigmoidOptimum",
    "SigmoidThresholds",
    "VarianceBounds",
    "alignment_identity",
    "antipodal",
    "ccem",
    "excessive_separation",
    "hard_negative_losses",
    "infonce_ccem_minimum",
    "lmcl_mean_distance_ceiling",
    "minibatch_optimum",
    "minibatch_variance_bounds",
    "negative_similarity_band",
    "phase_point",
    "phase_regions",
    "positive_similarity_ceiling",
    "scl_lower_bound",
    "sigmoid_excessive_separation",
    "sigmoid_optimum",
    "sigmoid_thresholds",
    "similarity_gradient",
    "simplex_etf",
    "tight_positive_similarity_ceiling",
    "ucl_lower_bound",
]
