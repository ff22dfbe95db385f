"""Backbones and projector have the paper's architecture (App. D)."""

import torch
from torch import nn

from contrastkit.models import (
    BACKBONES,
    GlobalBatchNorm,
    build_encoder,
    cifar_resnet18,
    convert_to_global_batch_norm,
    projector,
    resnet50,
    small_cnn,
    small_cnn_strided,
)


def test_cifar_resnet18_has_a_3x3_stride_1_stem_and_no_max_pool():
    model = cifar_resnet18()
    stem = model.conv1
    assert stem.kernel_size == (3, 3) and stem.stride == (1, 1) and stem.padding == (1, 1)
    assert isinstance(model.maxpool, nn.Identity) and isinstance(model.fc, nn.Identity)
    model.eval()
    with torch.no_grad():
        assert model(torch.rand(2, 3, 32, 32)).shape == (2, 512)
        # stage 1 sees the full 32x32 image
        assert model.layer1(model.relu(model.bn1(model.conv1(torch.rand(1, 3, 32, 32))))).shape \
            == (1, 64, 32, 32)


def test_resnet50_outputs_2048_features():
    model = resnet50()
    assert isinstance(model.fc, nn.Identity) and model.conv1.kernel_size == (7, 7)
    assert BACKBONES.get("resnet50").features == 2048
    model.eval()
    with torch.no_grad():
        assert model(torch.rand(1, 3, 64, 64)).shape == (1, 2048)


def test_small_cnn_outputs_128_features_for_8x8_digits():
    model = small_cnn(in_channels=1)
    assert model(torch.rand(4, 1, 8, 8)).shape == (4, 128)
    assert sum(p.numel() for p in model.parameters()) < 200_000


def test_the_strided_small_cnn_runs_its_costly_convolutions_at_a_quarter_of_the_pixels():
    """Same parameters as small_cnn, 128 features; on 28x28 images the second convolution
    sees 14x14 and the third 7x7 (small_cnn: 28x28 and 14x14)."""
    strided, plain = small_cnn_strided(1), small_cnn(1)
    assert [p.shape for p in strided.parameters()] == [p.shape for p in plain.parameters()]
    sizes = {}
    for name, module in (("strided", strided), ("plain", plain)):
        seen = []
        for layer in module:
            if isinstance(layer, torch.nn.Conv2d):
                layer.register_forward_hook(lambda _m, _i, out, seen=seen: seen.append(
                    out.shape[-1]))
        assert module(torch.rand(2, 1, 28, 28)).shape == (2, 128)
        sizes[name] = seen
    assert sizes == {"strided": [14, 14, 7], "plain": [28, 28, 14]}
    assert "small_cnn_strided" in BACKBONES.names()


def test_projector_is_linear_batchnorm_relu_linear():
    head = projector(512, hidden=512, out=128)
    kinds = [type(layer) for layer in head]
    assert kinds == [nn.Linear, nn.BatchNorm1d, nn.ReLU, nn.Linear]
    assert head[0].in_features == 512 and head[0].out_features == 512
    assert head[3].out_features == 128


def test_encoder_normalizes_its_input_and_exposes_features_and_projections():
    encoder = build_encoder("small_cnn", 1, mean=(0.5,), std=(0.25,), projector_hidden=32,
                            projector_out=16).eval()
    x = torch.rand(3, 1, 8, 8)
    with torch.no_grad():
        assert torch.allclose(encoder.features(x), encoder.backbone((x - 0.5) / 0.25))
        assert encoder(x).shape == (3, 16) and encoder.features(x).shape == (3, 128)


def test_global_batch_norm_equals_batch_norm_in_one_process():
    # float64, so that another summation order in the statistics stays far below the tolerance
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 5),
                          nn.BatchNorm1d(5)).double()
    converted = convert_to_global_batch_norm(
        nn.Sequential(*[layer for layer in _copy(model)]), torch.device("cpu"))
    assert isinstance(converted[1], GlobalBatchNorm) and isinstance(converted[4], GlobalBatchNorm)
    x = torch.rand(6, 1, 8, 8, dtype=torch.float64)
    torch.testing.assert_close(model(x), converted(x), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(model[1].running_var, converted[1].running_var,
                               rtol=1e-12, atol=1e-12)


def _copy(model):
    import copy

    return copy.deepcopy(model)
