"""Hard-negative losses: the sampling losses of Jiang et al. (SCL, HSCL, UCL, HUCL; :mod:`.loss`)
with their ``psi`` (:mod:`.psi`) and feature normalizations (:mod:`.feature_normalization`), and
the importance-weighted HCL of Robinson et al. (:mod:`.hcl`)."""

from .feature_normalization import normalize_features
from .hcl import HCL, hcl
from .loss import (
    HSCL,
    HUCL,
    SCL,
    UCL,
    HardNegativeLoss,
    hard_negative_loss,
    hscl,
    hucl,
    scl,
    ucl,
)
from .psi import CustomPsi, InfoNCEMean, InfoNCESum, Psi, Triplet

__all__ = [
    "CustomPsi",
    "HCL",
    "HSCL",
    "HUCL",
    "HardNegativeLoss",
    "InfoNCEMean",
    "InfoNCESum",
    "Psi",
    "SCL",
    "Triplet",
    "UCL",
    "hard_negative_loss",
    "hcl",
    "hscl",
    "hucl",
    "normalize_features",
    "scl",
    "ucl",
]
