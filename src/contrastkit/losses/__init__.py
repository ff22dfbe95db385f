"""Contrastive losses: each a pure function on two views ``u, v`` of shape ``(B, d)`` and a
composable ``nn.Module`` (``losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=50_000)``).

See ``docs/losses.md`` for every loss's formula and its place in the paper's unified framework.
Every loss module is registered by name (:mod:`.registry`): ``losses.names()``,
``losses.get("simclr")``, ``losses.build("siglip", {"scale": 10.0, "bias": -10.0})``, and
``@losses.register("mine")`` for a loss of your own.
"""

from ._base import CompositeLoss, ContrastiveLoss, LossOutput
from .dcl import DCL, dcl
from .dhel import DHEL, dhel
from .feature_normalization import normalize_features
from .generic import IndAdd, InfoSym, ind_add, info_sym
from .hard_negative import (
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
from .hcl import HCL, hcl
from .info_nce import InfoNCE, info_nce
from .polarization import Polarization, pair_distances, polarization
from .registry import build, get, names, register
from .siglip import SigLIP, siglip
from .simclr import SimCLR, simclr
from .spectral import Spectral, spectral
from .supcon import SupCon, supcon
from .vrns import VRNS, vrns

__all__ = [
    "CompositeLoss",
    "ContrastiveLoss",
    "DCL",
    "DHEL",
    "IndAdd",
    "InfoNCE",
    "InfoSym",
    "LossOutput",
    "SigLIP",
    "SimCLR",
    "Spectral",
    "VRNS",
    "dcl",
    "dhel",
    "ind_add",
    "info_nce",
    "info_sym",
    "siglip",
    "simclr",
    "spectral",
    "vrns",
    "build",
    "get",
    "names",
    "register",
    "HCL",
    "HSCL",
    "HUCL",
    "HardNegativeLoss",
    "Polarization",
    "SCL",
    "SupCon",
    "UCL",
    "hard_negative_loss",
    "hcl",
    "hscl",
    "hucl",
    "normalize_features",
    "pair_distances",
    "polarization",
    "scl",
    "supcon",
    "ucl",
]
