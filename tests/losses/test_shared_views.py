"""A composed objective shares its prepared views (issue 15): the composite equals the sum of its
terms computed apart (values and gradients, float64), and the check of the views, the row
normalization and the gather run once per composite call where the terms' settings agree, once
per distinct setting where they differ."""

from __future__ import annotations

import sys

import pytest
import torch

from contrastkit import distributed, losses, rows
from contrastkit.checks import tensors
from tests.conftest import random_views

BATCH, DIM = 9, 5
LABELS = torch.arange(BATCH) % 3  # every class three times: each anchor has positives


def build(name: str) -> losses.ContrastiveLoss:
    """The registered loss ``name`` as a training run builds it (the hard-negative losses with
    their exact estimator, which draws no random numbers)."""
    return losses.build(name, **dict(losses.get(name).training_options))


REGULARIZERS = {
    "vrns": lambda: 30 * losses.VRNS(n=50),
    "polarization": lambda: 0.5 * losses.Polarization(),
    "polarization_all": lambda: 0.5 * losses.Polarization(0.0, 1.0, views="all"),
}
# every registered loss with each regularizer, and pairs that share a similarity product
PAIRS = [(name, regularizer) for name in losses.names() for regularizer in REGULARIZERS]
PAIRS += [("spectral", "spectral"), ("polarization", "polarization_all")]


def term(name: str) -> losses.ContrastiveLoss:
    return REGULARIZERS[name]() if name in REGULARIZERS else build(name)


def value_and_grads(fn, u, v):
    u, v = u.clone().requires_grad_(), v.clone().requires_grad_()
    value = fn(u, v)
    grad_u, grad_v = torch.autograd.grad(value, (u, v))
    return value.detach(), grad_u, grad_v


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_composite_equals_the_sum_of_its_terms_computed_apart(first, second):
    u, v = random_views(BATCH, DIM, seed=11)
    a, b = term(first), term(second)
    composite = a + b
    shared = value_and_grads(lambda x, y: composite(x, y, LABELS), u, v)
    apart = value_and_grads(
        lambda x, y: sum(w * loss(x, y, LABELS) for w, loss in composite.terms()), u, v)
    for got, expected in zip(shared, apart, strict=True):
        assert torch.allclose(got, expected, rtol=1e-12, atol=1e-13)
    parts = composite.compute(u, v, LABELS).parts
    for (_, loss), part in zip(composite.terms(), parts.values(), strict=True):
        assert torch.allclose(part, loss(u, v, LABELS), rtol=1e-13, atol=1e-15)


def test_the_named_pairs_are_covered():
    for pair in [("simclr", "vrns"), ("simclr", "polarization"), ("info_nce", "vrns"),
                 ("siglip", "vrns"), ("supcon", "polarization")]:
        assert pair in PAIRS


# ----------------------------------------------------------------------------- call counters


def count_calls(monkeypatch, module, name: str) -> list:
    """Wrap ``module.name`` in every contrastkit module that holds it (so the count does not
    depend on how a loss imported it); the returned list grows by one per call."""
    original = getattr(module, name)
    calls: list = []

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    for loaded in list(sys.modules.values()):
        if (getattr(loaded, "__name__", "").startswith("contrastkit")
                and getattr(loaded, name, None) is original):
            monkeypatch.setattr(loaded, name, counted)
    return calls


@pytest.fixture
def counters(monkeypatch):
    return {
        "check_views": count_calls(monkeypatch, tensors, "check_view_shapes"),
        "finite": count_calls(monkeypatch, tensors, "check_finite_views"),
        "unit_rows": count_calls(monkeypatch, rows, "unit_rows_reporting"),
        "global_batch": count_calls(  # the module (the package rebinds the name)
            monkeypatch, sys.modules["contrastkit.losses.kernels.global_batch"], "global_batch"),
        "gather_rows": count_calls(monkeypatch, distributed, "gather_rows"),
    }


def counts(counters) -> dict[str, int]:
    return {name: len(calls) for name, calls in counters.items()}


AGREEING = {
    "simclr + vrns": lambda: losses.SimCLR(0.2) + 30 * losses.VRNS(n=50),
    "info_nce + siglip + vrns": lambda: (losses.InfoNCE(0.1) + losses.SigLIP()
                                         + 30 * losses.VRNS(n=50)),
    "simclr + polarization": lambda: losses.SimCLR(0.2) + 0.1 * losses.Polarization(),
    "supcon + polarization": lambda: losses.SupCon(0.1) + 0.1 * losses.Polarization(),
}


@pytest.mark.parametrize("name", AGREEING)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_agreeing_terms_check_normalize_and_batch_once(counters, name, dtype):
    u, v = random_views(BATCH, DIM, seed=1, dtype=dtype)
    AGREEING[name]().compute(u, v, LABELS)
    # unit_rows: once, for both views; polarization reads the prepared views, not a batch
    assert counts(counters) == {"check_views": 1, "finite": 0, "unit_rows": 1, "global_batch": 1,
                                "gather_rows": 0}


def test_distributed_terms_gather_once(counters):
    """``distributed=True`` (outside a process group the gather returns the rows): SimCLR and
    VRNS gather each view once between them; before, each term gathered both views."""
    u, v = random_views(BATCH, DIM, seed=2, dtype=torch.float32)
    composite = (losses.SimCLR(0.2, distributed=True) + 30 * losses.VRNS(n=50, distributed=True)
                 + losses.SigLIP(distributed=True))
    composite.compute(u, v)
    assert counts(counters) == {"check_views": 1, "finite": 0, "unit_rows": 1, "global_batch": 1,
                                "gather_rows": 2}


def test_distinct_settings_are_prepared_once_each(counters):
    u, v = random_views(BATCH, DIM, seed=3, dtype=torch.float32)
    composite = (losses.SimCLR(0.2, distributed=True) + losses.InfoNCE(0.1)
                 + 30 * losses.VRNS(n=50, normalize=False)
                 + losses.SimCLR(0.5, normalize=False, distributed=True))
    composite.compute(u, v)
    # batches: (normalize, distributed) = (T, T), (T, F), (F, F), (F, T); one normalization
    assert counts(counters) == {"check_views": 1, "finite": 0, "unit_rows": 1, "global_batch": 4,
                                "gather_rows": 4}


def test_half_precision_views_are_normalized_once_for_every_term(counters):
    """VRNS computes in at least float32, SimCLR and DCL in the views' bfloat16: one float32
    normalization (one host sync) serves both, the bfloat16 rows its rounding, with the values
    each term computes on its own."""
    u, v = random_views(BATCH, DIM, seed=4, dtype=torch.bfloat16)
    composite = losses.SimCLR(0.2) + 30 * losses.VRNS(n=50) + losses.DCL(0.1)
    out = composite.compute(u, v)
    assert counts(counters) == {"check_views": 1, "finite": 0, "unit_rows": 1,
                                "global_batch": 2, "gather_rows": 0}
    assert float(out.parts["vrns"]) == float(losses.vrns(u, v, n=50))
    assert out.parts["vrns"].dtype == torch.float32
    assert float(out.parts["simclr"]) == float(losses.simclr(u, v, 0.2))
    assert float(out.parts["dcl"]) == float(losses.dcl(u, v, 0.1))


def test_similarity_products_are_computed_once(monkeypatch):
    """Polarization over all pairs needs ``u u^T``, ``v v^T``, ``u v^T``; the spectral loss
    ``u v^T`` again: three products between them, not four."""
    products = []
    matmul = torch.Tensor.__matmul__

    def counted(self, other):
        products.append(tuple(self.shape))
        return matmul(self, other)

    monkeypatch.setattr(torch.Tensor, "__matmul__", counted)
    u, v = random_views(BATCH, DIM, seed=5)
    composite = losses.Spectral() + 0.5 * losses.Polarization(views="all")
    composite.compute(u, v)
    assert len(products) == 3
    from contrastkit.losses.views import SharedViews  # here: the counters run on older code

    shared = SharedViews(u, v)
    assert shared.similarities("uv", True) is shared.similarities("uv", True)
    assert shared.similarities("uv", False) is not shared.similarities("uv", True)
    with pytest.raises(ValueError, match="pair"):
        shared.similarities("vu", True)


# ------------------------------------------------------------------ what is not shared


class OwnForward(losses.SimCLR):
    """A subclass that overrides ``forward``: a composite calls it, on the views as given."""

    calls = 0

    def forward(self, u, v, labels=None):
        type(self).calls += 1
        return 2 * super().forward(u, v, labels)


def test_a_term_with_its_own_forward_or_a_hook_is_called_as_a_module():
    u, v = random_views(BATCH, DIM, seed=6)
    hooked = losses.VRNS(n=50)
    seen = []
    hooked.register_forward_hook(lambda module, args, output: seen.append(args[0] is u))
    out = (OwnForward(0.2) + hooked).compute(u, v)
    assert OwnForward.calls == 1 and seen == [True]
    assert torch.allclose(out.parts["simclr"], 2 * losses.simclr(u, v, 0.2), rtol=1e-13)


def test_a_loss_with_neither_forward_is_not_implemented():
    class Empty(losses.ContrastiveLoss):
        pass

    u, v = random_views(BATCH, DIM, seed=7)
    with pytest.raises(NotImplementedError, match="forward_shared"):
        Empty()(u, v)


def test_the_finiteness_check_runs_only_where_no_normalization_proved_it(counters):
    """Normalized rows with finite norms prove every entry finite: no separate reduction. A
    loss on the rows as given (normalize=False) checks them itself, once."""
    u, v = random_views(BATCH, DIM, seed=9, dtype=torch.float32)
    losses.simclr(u, v)
    assert counts(counters)["finite"] == 0
    losses.simclr(u, v, normalize=False)
    (30 * losses.VRNS(n=50, normalize=False) + losses.SimCLR(normalize=False)).compute(u, v)
    assert counts(counters)["finite"] == 2


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("view", ["u", "v"])
def test_a_non_finite_entry_is_a_value_error_naming_the_view(bad, normalize, view):
    """Also where the normalization ran first: its NaN or infinite norm sends the views to the
    explicit check, which names the view."""
    u, v = random_views(BATCH, DIM, seed=10, dtype=torch.float32)
    (u if view == "u" else v)[3, 1] = bad
    for compute in (lambda: losses.info_nce(u, v, normalize=normalize),
                    lambda: (losses.SimCLR(normalize=normalize) + 0.1 * losses.Polarization())
                    .compute(u, v)):
        with pytest.raises(ValueError, match=f"{view} contains NaN or Inf"):
            compute()


def test_bad_views_still_raise_once_through_a_composite():
    u, _ = random_views(BATCH, DIM, seed=8)
    with pytest.raises(ValueError, match="same shape"):
        (losses.SimCLR() + 30 * losses.VRNS(n=50)).compute(u, u[:-1])


# ------------------------------------------------------------------------------- gradcheck


def test_gradcheck_of_a_composite_through_the_shared_views():
    u, v = random_views(5, 4, seed=9)
    u.requires_grad_(True)
    v.requires_grad_(True)
    composite = (losses.SimCLR(0.2) + 3 * losses.VRNS(n=10) + losses.Spectral()
                 + 0.5 * losses.Polarization(0.0, 1.0, views="all"))
    assert torch.autograd.gradcheck(lambda x, y: composite(x, y), (u, v), eps=1e-6, atol=1e-7)
