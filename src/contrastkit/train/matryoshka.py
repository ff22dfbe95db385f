"""The config's Matryoshka settings (Kusupati et al., "Matryoshka Representation Learning",
NeurIPS 2022, arXiv:2205.13147): ``matryoshka_dims=64,128,256`` trains the objective on those
nested prefixes of the embedding (:class:`~contrastkit.losses.Matryoshka`), weighted by
``matryoshka_weights`` (``1,1,2``; 1 each when empty), and ``contrastkit evaluate`` measures
each prefix. Empty ``matryoshka_dims`` (the default) trains the full embedding alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contrastkit.checks.prefixes import check_prefix_dims, parse_numbers

if TYPE_CHECKING:
    from .config import PretrainConfig


def matryoshka_prefixes(config: PretrainConfig
                        ) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
    """The dimensions and weights of ``config``'s prefixes, checked (each error names
    ``matryoshka_dims`` or ``matryoshka_weights``); ``None`` without ``matryoshka_dims``."""
    dims = parse_numbers("matryoshka_dims", config.matryoshka_dims, int)
    weights = parse_numbers("matryoshka_weights", config.matryoshka_weights, float)
    if not dims:
        if weights:
            raise ValueError(f"matryoshka_weights={config.matryoshka_weights} would be ignored "
                             f"without matryoshka_dims (the prefixes they weight); give both, "
                             f"e.g. matryoshka_dims=64,128 matryoshka_weights=1,2")
        return None
    return check_prefix_dims(dims, weights or None, dims_name="matryoshka_dims",
                             weights_name="matryoshka_weights")


def check_matryoshka_settings(config: PretrainConfig) -> None:
    """:func:`matryoshka_prefixes`, and with the built-in towers (their embedding dimension is
    ``projector_out``) the largest prefix within it. The user's encoder and open_clip's towers
    are checked by the loss on the first step (:class:`~contrastkit.losses.Matryoshka`)."""
    prefixes = matryoshka_prefixes(config)
    if prefixes is None or config.clip_model or config.user_encoder:
        return
    if prefixes[0][-1] > config.projector_out:
        raise ValueError(f"matryoshka_dims={config.matryoshka_dims} must stay within the "
                         f"embedding dimension projector_out={config.projector_out}")
