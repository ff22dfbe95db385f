"""The kernels' plain-autograd path for small matrices (``PLAIN_AUTOGRAD_ENTRIES``,
losses/kernels/common.py): the same exactness tests as the hand-written kernels (imported below,
so pytest runs them again here with the small path on), the threshold that chooses the path,
equality with the kernels, and second derivatives, which the small path has and the kernels
refuse."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from contrastkit.losses.kernels import common

from ._fast_reference import ALL_LOSSES, EXP_FAMILY, SUPCON, fast, value_and_grads, views
from .test_fast_paths import (  # noqa: F401  (collected and run here, on the small path)
    test_autocast_leaves_float64_inputs_in_float64,
    test_bfloat16_inputs_give_float32_loss_and_bfloat16_gradients,
    test_float32_value_and_gradient_within_1e_6_of_the_float64_reference,
    test_float64_value_and_gradient_equal_the_exact_reference,
    test_gradcheck,
    test_half_precision_autocast_is_finite_and_close_to_float32,
    test_positive_rounds_like_its_normalizer_under_autocast,
    test_supcon_temperature_0_01_is_finite_and_exact,
    test_temperature_0_01_is_finite_and_exact,
    test_unnormalized_inputs,
)
from .test_learnable import (  # noqa: F401
    test_gradcheck_with_respect_to_embeddings_and_settings,
    test_value_and_gradients_match_the_loop_reference,
)
from .test_numerics import (  # noqa: F401
    test_finite_and_close_under_half_precision_autocast,
    test_finite_at_temperature_0_01_with_cosines_at_plus_minus_one,
    test_float32_agrees_with_float64_at_temperature_0_01,
)

# the losses whose matrices go through the kernels (VRNS sums squared similarities itself)
KERNEL_LOSSES = [*EXP_FAMILY, "siglip", *SUPCON]


@pytest.fixture(autouse=True)
def kernels_at_every_size():
    """Overrides the folder's fixture: the library's own threshold, so small matrices take the
    plain-autograd path."""


def _kernel_path_result(name, u, v, **kwargs):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
        return value_and_grads(lambda a, b: fast(name, a, b, **kwargs), u, v)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("name", KERNEL_LOSSES)
def test_the_small_path_equals_the_kernels_in_float64(name, normalize):
    options = {} if name in SUPCON else {"normalize": normalize}
    u, v = views(10, 6, seed=21)
    value, grads = value_and_grads(lambda a, b: fast(name, a, b, **options), u, v)
    kernel_value, kernel_grads = _kernel_path_result(name, u, v, **options)
    torch.testing.assert_close(value, kernel_value, rtol=1e-13, atol=1e-13)
    for grad, kernel_grad in zip(grads, kernel_grads, strict=True):
        torch.testing.assert_close(grad, kernel_grad, rtol=1e-11, atol=1e-13)


def _backward_names(value: torch.Tensor) -> set[str]:
    """The names of every node of ``value``'s backward graph."""
    names, stack, seen = set(), [value.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(type(node).__name__)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names


def _takes_a_kernel(value: torch.Tensor) -> bool:
    """Whether the graph holds one of the kernels' autograd Functions (``_...Backward``; the
    row normalization's, on every path, does not count)."""
    return any(name.startswith("_") and name.endswith("Backward") and name != "_UnitRowsBackward"
               for name in _backward_names(value))


@pytest.mark.parametrize(("name", "largest_small_batch"),
                         [("info_nce", 256), ("siglip", 512), ("simclr", 128), ("dcl", 128),
                          ("dhel", 256), ("supcon", 128)])
def test_the_threshold_is_on_the_matrix_entries(name, largest_small_batch):
    """InfoNCE, SigLIP and DHEL form B x B matrices, SimCLR, DCL and SupCon one 2B x 2B: up to
    PLAIN_AUTOGRAD_ENTRIES = 256^2 entries in plain autograd (SigLIP's softplus: 4 times as
    many, 512^2), then the kernels; a chunk_size smaller than the batch always takes the
    chunked kernel."""
    assert common.PLAIN_AUTOGRAD_ENTRIES == 256 * 256
    for batch, kernel in [(largest_small_batch, False), (largest_small_batch + 1, True)]:
        u, v = views(batch, 4, seed=batch, dtype=torch.float32)
        assert _takes_a_kernel(fast(name, u, v)) == kernel, batch
    u, v = views(8, 4, seed=3, dtype=torch.float32)
    assert _takes_a_kernel(fast(name, u, v, chunk_size=3))
    assert not _takes_a_kernel(fast(name, u, v, chunk_size=16))  # one block of all 2B rows


@pytest.mark.parametrize("name", KERNEL_LOSSES)
def test_second_derivatives_on_the_small_path_are_autograds(name):
    """The small path is plain autograd, so create_graph works there (gradient penalties);
    the kernels refuse it with a clear error (test_fast_paths.py)."""
    u, v = views(5, 3, seed=14)
    assert torch.autograd.gradgradcheck(lambda a, b: fast(name, a, b), (u, v))


def test_a_tensor_bias_and_scale_receive_the_kernels_gradients():
    u, v = views(6, 4, seed=5)

    def gradients():
        scale = torch.tensor(7.0, dtype=torch.float64, requires_grad=True)
        bias = torch.tensor(-3.0, dtype=torch.float64, requires_grad=True)
        value = losses.siglip(u, v, scale=scale, bias=bias)
        return torch.autograd.grad(value, (u, v, scale, bias))

    small = gradients()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
        kernel = gradients()
    for a, b in zip(small, kernel, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)


def test_every_loss_is_covered():
    assert set(KERNEL_LOSSES) <= set(ALL_LOSSES)


@pytest.mark.parametrize(("name", "reduction"), [("info_nce", "NllLossBackward0"),
                                                 ("simclr", "NllLossBackward0"),
                                                 ("siglip", "SoftplusBackward0")])
def test_the_small_path_reads_the_positives_off_the_matrix(name, reduction):
    """On a small matrix InfoNCE and SimCLR are one cross-entropy of its rows at the
    positives' columns, SigLIP one softplus with the positives' entries subtracted: no separate
    ``O(B d)`` positive term (the row-wise sum of ``u_i * v_i``, a ``SumBackward1``), whose
    operators cost more than it saves there. The kernel path keeps that term."""
    u, v = views(8, 4, seed=2, dtype=torch.float32)
    names = _backward_names(fast(name, u, v))
    assert reduction in names and "SumBackward1" not in names
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
        assert "SumBackward1" in _backward_names(fast(name, u, v))


@pytest.mark.parametrize("name", SUPCON)
def test_supcon_small_path_reads_the_mean_positive_off_the_matrix(name):
    """On a small matrix SupCon averages its positives' logits off the matrix through the label
    mask (eq. 2 as written): no per-class sums (an ``IndexAddBackward0``), which the kernel path
    keeps to avoid the ``2B x 2B`` mask."""
    u, v = views(8, 4, seed=2, dtype=torch.float32)
    assert "IndexAddBackward0" not in _backward_names(fast(name, u, v))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 0)
        assert "IndexAddBackward0" in _backward_names(fast(name, u, v))
