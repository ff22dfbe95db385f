"""Input validation for the supervised, hard-negative and large-margin losses.

Like :mod:`._checks`, every check raises ``ValueError`` naming the argument and what was
expected.
"""

from __future__ import annotations

from numbers import Integral

import torch

from ._checks import check_finite_number


def check_nonnegative(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number >= 0, else raise."""
    value = check_finite_number(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_tau_plus(tau_plus: float) -> float:
    """The class prior ``tau_plus`` of debiasing must lie in ``[0, 1)``."""
    tau_plus = check_finite_number("tau_plus", tau_plus)
    if not 0.0 <= tau_plus < 1.0:
        raise ValueError(f"tau_plus (the positive-class prior) must be in [0, 1), got {tau_plus}")
    return tau_plus


def check_num_negatives(k: int) -> int:
    """The number ``k`` of negatives drawn per positive pair: an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ValueError(f"k (negatives per positive pair) must be an integer >= 1, got {k!r}")
    return int(k)


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """Check that ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_generator(generator: torch.Generator | None, device: torch.device) -> None:
    """A sampling ``generator`` must be a ``torch.Generator`` on the embeddings' device."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise ValueError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if generator.device.type != device.type:
        raise ValueError(
            f"generator must live on the embeddings' device ({device.type}), "
            f"got a generator on {generator.device.type}"
        )


def check_margin_band(delta_plus: float, delta_minus: float) -> tuple[float, float]:
    """The LMCL thresholds must satisfy ``0 <= delta_plus < delta_minus <= 1``."""
    delta_plus = check_finite_number("delta_plus", delta_plus)
    delta_minus = check_finite_number("delta_minus", delta_minus)
    if not delta_plus < delta_minus:
        raise ValueError(
            f"delta_plus must be < delta_minus (the margin band is (delta_plus, delta_minus)), "
            f"got delta_plus={delta_plus}, delta_minus={delta_minus}"
        )
    if delta_plus < 0 or delta_minus > 1:
        raise ValueError(
            "delta_plus and delta_minus must lie in [0, 1], the range of the distance "
            f"(1 - cos) / 2; got delta_plus={delta_plus}, delta_minus={delta_minus}"
        )
    return delta_plus, delta_minus
