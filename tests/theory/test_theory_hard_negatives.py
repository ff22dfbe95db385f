"""SCL / UCL lower bounds (hard-negative paper, Theorems 2 and 3); values: spec seed-004 §3.8."""

import itertools

import numpy as np
import pytest

from contrastkit import theory


def test_reference_values():
    assert theory.scl_lower_bound(3) == pytest.approx(0.2014133, abs=1e-7)  # paper: 0.2014
    assert theory.ucl_lower_bound(3, k=256) == pytest.approx(0.3933318, abs=1e-7)  # paper 0.3935
    assert theory.scl_lower_bound(100) == pytest.approx(0.3105551, abs=1e-7)  # Table 1: 0.3105
    assert theory.ucl_lower_bound(3, k=2) == pytest.approx(0.378625, abs=1e-6)  # quoted to 6 d.p.
    assert theory.ucl_lower_bound(100, k=256) == pytest.approx(0.3152009, abs=1e-7)
    assert theory.scl_lower_bound(3, 256, psi="sum") == pytest.approx(4.0625, abs=1e-4)
    assert theory.ucl_lower_bound(3, 256, psi="sum") == pytest.approx(4.8225, abs=1e-4)


def test_ucl_bound_matches_exact_enumeration_over_class_patterns():
    # eq. (30): average psi over all C^(k+1) label tuples (y, y^-_1..k), by brute force
    for C, k, form in [(3, 2, "mean"), (4, 3, "sum"), (3, 3, "triplet")]:
        margin = -C / (C - 1)
        values = []
        for labels in itertools.product(range(C), repeat=k + 1):
            args = np.array([margin if neg != labels[0] else 0.0 for neg in labels[1:]])
            if form == "mean":
                values.append(np.log1p(np.mean(np.exp(args))))
            elif form == "sum":
                values.append(np.log1p(np.sum(np.exp(args))))
            else:
                values.append(np.sum(np.maximum(args + 1, 0)))
        assert theory.ucl_lower_bound(C, k, psi=form) == pytest.approx(np.mean(values), abs=1e-12)


def test_figure_5_row_and_triplet_closed_form():
    fig5_k1 = [0.4100, 0.3653, 0.3488, 0.3402, 0.3349, 0.3314]  # spec §3.8, C = 2..7
    got = [theory.ucl_lower_bound(C, 1, psi="sum") for C in range(2, 8)]
    np.testing.assert_allclose(got, fig5_k1, atol=5e-5)
    for C, k in [(2, 1), (5, 3), (10, 4)]:
        assert theory.ucl_lower_bound(C, k, psi="triplet") == pytest.approx(k / C)
        assert theory.scl_lower_bound(C, k, psi="triplet") == 0.0


def test_monotone_in_classes():
    scl = [theory.scl_lower_bound(C) for C in range(2, 30)]
    ucl = [theory.ucl_lower_bound(C, 16) for C in range(2, 30)]
    assert all(np.diff(scl) > 0) and all(np.diff(ucl) < 0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: theory.scl_lower_bound(1), "C"),
        (lambda: theory.ucl_lower_bound(3, k=0), "k"),
        (lambda: theory.ucl_lower_bound(3, psi="max"), "psi"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()
