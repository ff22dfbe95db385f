"""Hard-negative sampling losses of Jiang et al. (SCL, HSCL, UCL, HUCL) and their ``psi``."""

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
    "hscl",
    "hucl",
    "scl",
    "ucl",
]
