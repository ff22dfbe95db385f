"""The simulator's experiments as library functions (what ``contrastkit simulate`` calls)."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit import losses, theory
from contrastkit.simulate import loss_by_name, minibatch_runs, sigmoid_phase


def test_loss_by_name_takes_the_registry_settings_and_adds_vrns():
    loss = loss_by_name("siglip", {"scale": 3.0, "bias": -2.0, "temperature": 0.7})
    assert isinstance(loss, losses.SigLIP) and (loss.scale, loss.bias) == (3.0, -2.0)
    (w1, first), (w2, second) = loss_by_name("dcl", {"temperature": 0.3}, vrns=5, n=8).terms()
    assert first.temperature == 0.3 and w2 == 5.0 and second.n == 8


@pytest.mark.parametrize("name", ["supcon", "vrns", "nope"])
def test_loss_by_name_refuses_losses_free_embeddings_cannot_feed(name):
    with pytest.raises(ValueError, match="loss must be"):
        loss_by_name(name)


def test_minibatch_runs_reach_the_theorem_5_5_extremes_range():
    runs = minibatch_runs(losses.SimCLR(0.5), 4, 3, m=2, steps=300, lr=0.1, seed=0)
    assert list(runs) == ["full batch", "fixed mini-batches (m = 2)"]
    bounds = theory.minibatch_variance_bounds(4, 2)
    variance = runs["fixed mini-batches (m = 2)"].stats.negative_var
    assert bounds.low - 1e-3 <= variance <= bounds.high + 1e-3
    assert runs["full batch"].stats.negative_mean == pytest.approx(-1 / 3, abs=1e-3)


def test_sigmoid_phase_matches_the_optimum_where_the_theory_applies():
    phase = sigmoid_phase([4, 6], [0.5, 2.0], steps=300, lr=0.1)
    assert phase.simulated.shape == phase.predicted.shape == (2, 2)
    expected = [[theory.sigmoid_optimum(n, t, t).normalized_positive for n in (4, 6)]
                for t in (0.5, 2.0)]
    assert np.allclose(phase.predicted, expected)
    assert phase.largest_gap < 1e-2
    assert phase.as_dict()["N"] == [4, 6] and phase.as_dict()["steps"] == 300
