"""Contrastive losses: each a pure function on two views ``u, v`` of shape ``(B, d)`` and a
composable ``nn.Module`` (``losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=50_000)``).

See ``docs/losses.md`` for every loss's formula and its place in the paper's unified framework.
The modules follow the paper's table of losses: :mod:`.framework` (Def. 3.1 ``info_sym`` and
Def. 3.2 ``ind_add`` for any ``phi``, ``psi``), :mod:`.infonce_family` (its ``phi = exp(x / t)``
members: InfoNCE, SimCLR, DCL, DHEL), :mod:`.siglip`, :mod:`.spectral`, :mod:`.vrns`,
:mod:`.supcon`, :mod:`.polarization` (LMCL), :mod:`.hard_negative` (SCL, HSCL, UCL, HUCL of
Jiang et al., HCL of Robinson et al., the feature normalizations), :mod:`.matryoshka` (any loss
on nested prefixes of the embedding); the private kernels they share are in :mod:`.kernels`.

Every loss module is registered by name (:mod:`.registry`): ``losses.names()``,
``losses.get("simclr")``, ``losses.build("siglip", {"scale": 10.0, "bias": -10.0})``, and
``@losses.register("mine")`` for a loss of your own.
"""

from .base import CompositeLoss, ContrastiveLoss, LossOutput
from .framework import IndAdd, InfoSym, ind_add, info_sym
from .hard_negative import (
    HCL,
    HSCL,
    HUCL,
    SCL,
    UCL,
    HardNegativeLoss,
    hard_negative_loss,
    hcl,
    hscl,
    hucl,
    normalize_features,
    scl,
    ucl,
)
from .infonce_family import DCL, DHEL, InfoNCE, SimCLR, dcl, dhel, info_nce, simclr
from .matryoshka import Matryoshka, matryoshka
from .polarization import Polarization, pair_distances, polarization
from .registry import build, get, names, register
from .siglip import SigLIP, siglip
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
    "Matryoshka",
    "SigLIP",
    "SimCLR",
    "Spectral",
    "VRNS",
    "dcl",
    "dhel",
    "ind_add",
    "info_nce",
    "info_sym",
    "matryoshka",
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
