"""The fused paths (losses/kernels/) against exact references: value, gradient, numerics, memory.

References: ``info_sym`` (Def. 3.1 on full matrices) for the exp family, float64 loops over pairs
for the sigmoid loss (eq. 9) and VRNS (Def. 5.7); see ``_fast_reference.py``.
"""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses

from ._fast_reference import (
    ALL_LOSSES,
    EXP_FAMILY,
    SUPCON,
    fast,
    reference,
    supcon_inputs,
    value_and_grads,
    views,
)
from ._reference_family import supcon_reference


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_float64_value_and_gradient_equal_the_exact_reference(name):
    u, v = views(9, 5, seed=1)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b), u, v)
    expected, expected_grads = value_and_grads(lambda a, b: reference(name, a, b), u, v)
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_float32_value_and_gradient_within_1e_6_of_the_float64_reference(name):
    u, v = views(24, 16, seed=2, dtype=torch.float32)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b), u, v)
    u64, v64 = (x.detach().double().requires_grad_() for x in (u, v))
    expected, expected_grads = value_and_grads(lambda a, b: reference(name, a, b), u64, v64)
    assert value.dtype == torch.float32
    assert abs(float(value) - float(expected)) <= 1e-6 * max(1.0, abs(float(expected)))
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        assert grad.dtype == torch.float32
        torch.testing.assert_close(grad.double(), expected_grad, rtol=0, atol=1e-6)


@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("name", ALL_LOSSES)
def test_gradcheck(name, chunk_size):
    u, v = views(7, 3, seed=3)
    assert torch.autograd.gradcheck(lambda a, b: fast(name, a, b, chunk_size=chunk_size), (u, v))


@pytest.mark.parametrize("name", EXP_FAMILY)
def test_unnormalized_inputs(name):
    u, v = views(6, 4, seed=4)
    u2, v2 = (0.5 * x.detach() for x in (u, v))
    value = getattr(losses, name)(u2, v2, temperature=0.5, normalize=False)
    psi, c1, c2 = EXP_FAMILY[name]
    expected = losses.info_sym(u2, v2, lambda x: torch.exp(x / 0.5), psi, c1, c2, normalize=False)
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)


def test_positive_inside_within_view_normalizer():
    """c = (0, 1) with psi = log(1 + x): the positive is not a candidate, so it is added to
    the log-sum-exp separately (a branch no named loss uses)."""
    from contrastkit.losses.infonce_family import exp_family_loss

    u, v = views(6, 4, seed=5)
    value = exp_family_loss(u, v, 0.4, cross_view=False, within_view=True, include_positive=True)
    expected = losses.info_sym(u, v, lambda x: torch.exp(x / 0.4), torch.log1p, 0, 1)
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", EXP_FAMILY)
def test_temperature_0_01_is_finite_and_exact(name):
    """exp(1/0.01) overflows float32; the log-sum-exp does not."""
    u, v = views(16, 8, seed=6, dtype=torch.float32)
    value, grads = value_and_grads(lambda a, b: getattr(losses, name)(a, b, temperature=0.01), u, v)
    u64, v64 = (x.detach().double() for x in (u, v))
    expected = losses.info_sym(
        u64, v64, lambda x: torch.exp(x / 0.01), EXP_FAMILY[name][0], *EXP_FAMILY[name][1:]
    )
    assert abs(float(value) - float(expected)) <= 1e-5 * max(1.0, abs(float(expected)))
    assert all(bool(torch.isfinite(g).all()) for g in grads)


@pytest.mark.parametrize("name", SUPCON)
def test_supcon_dense_reference_equals_the_loop_reference(name):
    """The differentiable reference the SupCon gradients are checked against is eq. 2 itself."""
    u, v = (x.detach() for x in views(9, 5, seed=1))
    expected = supcon_reference(*supcon_inputs(name, u, v), 0.3)
    assert abs(float(reference(name, u, v)) - expected) <= 1e-12 * abs(expected)


@pytest.mark.parametrize("name", SUPCON)
def test_supcon_temperature_0_01_is_finite_and_exact(name):
    u, v = views(16, 8, seed=6, dtype=torch.float32)
    value, grads = value_and_grads(
        lambda a, b: losses.supcon(*supcon_inputs(name, a, b), temperature=0.01), u, v
    )
    expected = supcon_reference(*supcon_inputs(name, u.detach().double(), v.detach().double()),
                                0.01)
    assert abs(float(value) - expected) <= 1e-5 * max(1.0, abs(expected))
    assert all(bool(torch.isfinite(g).all()) for g in grads)


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("chunk_size", [None, 5])
@pytest.mark.parametrize("name", ALL_LOSSES)
def test_half_precision_autocast_is_finite_and_close_to_float32(name, chunk_size, half):
    u, v = views(16, 8, seed=7, dtype=torch.float32)
    plain = fast(name, u, v, chunk_size=chunk_size)
    with torch.autocast("cpu", dtype=half):
        mixed = fast(name, u, v, chunk_size=chunk_size)
    grads = torch.autograd.grad(mixed, (u, v))
    assert mixed.dtype == torch.float32
    assert all(g.dtype == torch.float32 and bool(torch.isfinite(g).all()) for g in grads)
    if name.startswith("vrns"):  # VRNS runs in float32 with autocast off: identical
        torch.testing.assert_close(mixed, plain, rtol=0, atol=0)
    else:  # half-precision products (so not bit-equal), reductions in float32
        assert float(mixed.detach()) != float(plain.detach())
        torch.testing.assert_close(mixed, plain, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["simclr", "info_nce"])
def test_positive_rounds_like_its_normalizer_under_autocast(name):
    """Aligned views at t = 0.01: the loss is ~0 and must not go negative from the positive
    logit being rounded differently (bf16) from the same entry in the log-sum-exp."""
    u = torch.randn(64, 32, generator=torch.Generator().manual_seed(17))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        values = [float(getattr(losses, name)(u, u + shift, temperature=0.01))
                  for shift in (0.0, 0.01, -0.01)]
    assert min(values) >= 0.0


@pytest.mark.parametrize("labels", [torch.arange(64), torch.arange(64) // 4])
def test_supcon_under_bfloat16_autocast_at_temperature_0_01_stays_close(labels):
    """SupCon's mean positive logit comes from float32 class sums, not from the bf16 logits of
    its normalizer, so it carries their rounding (about 5e-5 / t here): close, finite, >= 0."""
    u = torch.randn(64, 32, generator=torch.Generator().manual_seed(17))
    plain = float(losses.supcon(u, u + 0.01, labels, temperature=0.01))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = float(losses.supcon(u, u + 0.01, labels, temperature=0.01))
    assert 0.0 <= mixed and abs(mixed - plain) <= 2e-2


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_autocast_leaves_float64_inputs_in_float64(name):
    u, v = views(8, 4, seed=16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = fast(name, u, v)
    torch.testing.assert_close(mixed, fast(name, u, v), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_bfloat16_inputs_give_float32_loss_and_bfloat16_gradients(name):
    u, v = views(12, 8, seed=8, dtype=torch.bfloat16)
    value = fast(name, u, v)
    grads = torch.autograd.grad(value, (u, v))
    assert value.dtype == torch.float32 and bool(torch.isfinite(value))
    assert all(g.dtype == torch.bfloat16 and bool(torch.isfinite(g).all()) for g in grads)


def _saved_sizes(loss_fn, u, v):
    """Numbers of elements of the distinct tensors autograd keeps for the backward."""
    sizes = {}

    def pack(tensor):
        sizes[(tensor.untyped_storage().data_ptr(), tensor.shape)] = tensor.numel()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss_fn(u, v).backward()
    return sorted(sizes.values(), reverse=True)


@pytest.mark.parametrize(
    ("name", "matrices"),
    [
        # B = 32. Anchors = candidates (SimCLR, DCL, SupCon: [u; v], 2B rows; DHEL: each view,
        # B rows): the symmetric kernel keeps the top half and the bottom-right quarter.
        ("simclr", [2 * 32**2, 32**2]), ("dcl", [2 * 32**2, 32**2]),
        ("supcon", [2 * 32**2, 32**2]), ("supcon_single", [2 * 32**2, 32**2]),
        ("dhel", [2 * 16**2, 2 * 16**2, 16**2, 16**2]),
        ("info_nce", [32**2]), ("siglip", []),
    ],
)
def test_at_most_one_similarity_matrix_is_kept_for_the_backward(name, matrices):
    """No positive mask or softmax copy is kept: SimCLR/DCL/SupCon keep 3/4 of their (2B)^2
    matrix, DHEL 3/4 of one B^2 per view, InfoNCE one B^2 (its two directions are the rows and
    columns of one matrix), SigLIP none (its forward applies each entry's derivative at once)."""
    batch, dim = 32, 2
    u, v = views(batch, dim, seed=9, dtype=torch.float32)
    sizes = _saved_sizes(lambda a, b: fast(name, a, b), u, v)
    assert [size for size in sizes if size > 2 * batch * dim] == matrices


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_chunked_paths_keep_no_matrix(name):
    batch, dim = 32, 4
    u, v = views(batch, dim, seed=10, dtype=torch.float32)
    sizes = _saved_sizes(lambda a, b: fast(name, a, b, chunk_size=8), u, v)
    assert max(sizes) <= 2 * batch * dim


@pytest.mark.parametrize("batch,dim", [(64, 4), (6, 32)])
def test_vrns_keeps_no_more_than_the_views(batch, dim):
    """A large batch (B > 2d) goes through d x d Gram matrices, a small one through its
    B x B similarities: either way no saved tensor is larger than the views."""
    u, v = views(batch, dim, seed=11, dtype=torch.float32)
    sizes = _saved_sizes(lambda a, b: losses.vrns(a, b, n=100, within_view=True), u, v)
    assert max(sizes) <= batch * dim


@pytest.mark.parametrize("chunk_size", [0, -3, 2.5, True, "8"])
@pytest.mark.parametrize("name", ALL_LOSSES)
def test_bad_chunk_size_raises(name, chunk_size):
    u, v = views(4, 3, seed=12)
    with pytest.raises(ValueError, match="chunk_size"):
        fast(name, u, v, chunk_size=chunk_size)


@pytest.mark.parametrize(
    "module",
    [
        lambda: losses.SimCLR(chunk_size=0),
        lambda: losses.InfoNCE(chunk_size=-1),
        lambda: losses.SigLIP(chunk_size=1.5),
        lambda: losses.VRNS(n=10, chunk_size=0),
        lambda: losses.SupCon(chunk_size=0),
    ],
)
def test_modules_reject_bad_chunk_size(module):
    with pytest.raises(ValueError, match="chunk_size"):
        module()


def test_modules_pass_chunk_size_and_distributed_through():
    u, v = views(10, 4, seed=13)
    module = losses.DCL(temperature=0.3, chunk_size=3, distributed=True)
    assert "chunk_size=3" in repr(module)
    torch.testing.assert_close(module(u, v), losses.dcl(u, v, temperature=0.3))
    siglip = losses.SigLIP(scale=7.0, bias=-3.0, chunk_size=4)
    torch.testing.assert_close(siglip(u, v), fast("siglip", u, v))
    vrns = losses.VRNS(n=50, within_view=True, chunk_size=4)
    torch.testing.assert_close(vrns(u, v), fast("vrns_within", u, v))
    supcon = losses.SupCon(temperature=0.3, chunk_size=4, distributed=True)
    assert (supcon.chunk_size, supcon.distributed) == (4, True)
    torch.testing.assert_close(supcon(*supcon_inputs("supcon", u, v)), fast("supcon", u, v))


@pytest.mark.parametrize("name", ["simclr", "siglip", "supcon"])
def test_second_derivatives_are_refused_not_silently_wrong(name):
    u, v = views(5, 3, seed=14)
    with pytest.raises(RuntimeError, match="second derivatives"):
        torch.autograd.grad(fast(name, u, v), u, create_graph=True)


def test_mean_positive_logits_from_class_sums_match_a_loop():
    """The SupCon plug-in: O(B d) class sums equal the mean over same-class pairs."""
    from contrastkit.losses.kernels import mean_positive_logits

    u, v = views(9, 4, seed=15)
    z = torch.cat([u, v])
    labels = torch.tensor([3, 1, 3, 7, 1, 5, 3, 9, 9]).repeat(2)
    labels[-1] = 11  # one class with a single member: no positive
    anchors = slice(8, 18)  # a subset of the candidates, as one process's rows would be
    means, counts = mean_positive_logits(z[anchors], labels[anchors], z, labels, 0.5)
    z, means = z.detach(), means.detach()
    assert int(counts[-1]) == 0 and float(means[-1]) == 0.0
    for row, a in enumerate(range(8, 18)):
        positives = [p for p in range(len(z)) if p != a and labels[p] == labels[a]]
        assert int(counts[row]) == len(positives)
        expected = sum(float(z[a] @ z[p]) * 0.5 for p in positives) / max(len(positives), 1)
        assert abs(float(means[row]) - expected) < 1e-12
    grads = torch.autograd.gradcheck(
        lambda a, b: mean_positive_logits(torch.cat([a, b]), labels, torch.cat([a, b]),
                                          labels, 0.5)[0],
        (u, v),
    )
    assert grads
