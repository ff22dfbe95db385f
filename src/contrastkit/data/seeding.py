"""Seeds derived from several integers, identical on every platform and process."""

from __future__ import annotations

import numpy as np
import torch


def derived_generator(*keys: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded from ``keys`` (e.g. ``(seed, epoch, index)``) through
    numpy's ``SeedSequence``, so nearby keys give unrelated streams."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))
