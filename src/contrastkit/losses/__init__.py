"""Contrastive losses: each a pure function on two views ``u, v`` of shape ``(B, d)`` and a
composable ``nn.Module`` (``losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=50_000)``).

See ``docs/losses.md`` for every loss's formula and its place in the paper's unified framework.
"""

from ._base import CompositeLoss, ContrastiveLoss, LossOutput
from .dcl import DCL, dcl
from .dhel import DHEL, dhel
from .generic import IndAdd, InfoSym, ind_add, info_sym
from .info_nce import InfoNCE, info_nce
from .siglip import SigLIP, siglip
from .simclr import SimCLR, simclr
from .spectral import Spectral, spectral
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
]
