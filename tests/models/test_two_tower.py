"""The built-in image-text two-tower model: small CNN image tower, byte-level text tower."""

import copy

import pytest
import torch
from torch import nn

from contrastkit.models import ByteTokenizer, TextEncoder, TwoTower, TwoTowerBase, build_two_tower

TEXTS = ["a zero", "a one", "the digit two", "three"]


def small_model(seed: int = 0, **kwargs) -> TwoTower:
    torch.manual_seed(seed)
    options = {"embed_dim": 24, "context_length": 16, "text_width": 32, "text_layers": 1}
    return build_two_tower("small_cnn", 1, (0.5,), (0.25,), **{**options, **kwargs})


def images(batch: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.rand(batch, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


def test_the_towers_embed_into_one_space():
    model = small_model()
    tokens = model.tokenizer(TEXTS)
    assert isinstance(model, TwoTowerBase) and isinstance(model, nn.Module)
    assert tokens.dtype == torch.long and tokens.shape == (4, 16)
    assert model.image_features(images()).shape == (4, 128) and model.features_dim == 128
    assert model.encode_image(images()).shape == (4, 24)
    assert model.encode_text(tokens).shape == (4, 24)
    assert model.embed_dim == 24


def test_the_defaults():
    torch.manual_seed(0)
    model = build_two_tower("small_cnn", 1, (0.5,), (0.25,))
    assert model.embed_dim == 128 and model.tokenizer.context_length == 32
    assert isinstance(model.tokenizer, ByteTokenizer) and isinstance(model.text, TextEncoder)
    assert model.text.features_dim == 128 and len(model.text.transformer.layers) == 2
    assert model.text.transformer.layers[0].self_attn.num_heads == 4
    assert model.encode_text(model.tokenizer(TEXTS)).shape == (4, 128)


def test_features_are_the_normalized_backbone_output_and_the_embeddings_its_linear_map():
    model = small_model()
    x = images()
    features = model.features(x)
    torch.testing.assert_close(features, model.backbone((x - 0.5) / 0.25))
    torch.testing.assert_close(model.image_features(x), features)
    torch.testing.assert_close(model.encode_image(x), features @ model.image_projection.weight.T)
    tokens = model.tokenizer(TEXTS)
    torch.testing.assert_close(model.encode_text(tokens),
                               model.text(tokens) @ model.text_projection.weight.T)
    for projection in (model.image_projection, model.text_projection):
        assert isinstance(projection, nn.Linear) and projection.bias is None


def test_the_embeddings_are_not_normalized():
    model = small_model()
    norms = torch.cat([model.encode_image(images()).norm(dim=1),
                       model.encode_text(model.tokenizer(TEXTS)).norm(dim=1)])
    assert not torch.allclose(norms, torch.ones_like(norms), atol=1e-2)


def test_forward_dispatches_to_the_tower_named():
    model = small_model().eval()
    tokens = model.tokenizer(TEXTS)
    with torch.no_grad():
        assert torch.equal(model(images()), model.encode_image(images()))
        assert torch.equal(model(images(), tower="image"), model.encode_image(images()))
        assert torch.equal(model(tokens, tower="text"), model.encode_text(tokens))


@pytest.mark.parametrize("tower", ["audio", "Image", None])
def test_an_unknown_tower_is_an_error(tower):
    with pytest.raises(ValueError, match="tower must be one of 'image', 'text'"):
        small_model()(images(), tower=tower)


def test_gradients_flow_to_both_towers_through_a_contrastive_loss():
    model = small_model()
    z_image = nn.functional.normalize(model(images()), dim=1)
    z_text = nn.functional.normalize(model(model.tokenizer(TEXTS), tower="text"), dim=1)
    logits = z_image @ z_text.T / 0.1
    nn.functional.cross_entropy(logits, torch.arange(4)).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, name
    for part in (model.backbone, model.image_projection, model.text, model.text_projection):
        assert sum(p.grad.abs().sum() for p in part.parameters()) > 0


def test_the_model_is_the_same_under_the_same_seed_and_differs_under_another():
    tokens = ByteTokenizer(16)(TEXTS)
    outputs = []
    for seed in (0, 0, 1):
        model = small_model(seed).eval()
        with torch.no_grad():
            outputs.append((model.encode_image(images()), model.encode_text(tokens)))
    assert all(torch.equal(a, b) for a, b in zip(outputs[0], outputs[1], strict=True))
    assert not any(torch.allclose(a, b) for a, b in zip(outputs[0], outputs[2], strict=True))


def test_a_state_dict_and_a_deep_copy_reproduce_the_model():
    model, other = small_model(0).eval(), small_model(1).eval()
    other.load_state_dict(model.state_dict())
    twin = copy.deepcopy(model)
    tokens = model.tokenizer(TEXTS)
    with torch.no_grad():
        for copy_ in (other, twin):
            assert torch.equal(copy_.encode_image(images()), model.encode_image(images()))
            assert torch.equal(copy_.encode_text(tokens), model.encode_text(tokens))


def test_a_three_channel_backbone():
    torch.manual_seed(0)
    model = build_two_tower("small_cnn_strided", 3, (0.4, 0.5, 0.6), (0.2, 0.2, 0.2),
                            embed_dim=16, text_width=32, text_layers=1)
    assert model.encode_image(torch.rand(2, 3, 16, 16)).shape == (2, 16)


@pytest.mark.parametrize("kwargs, match", [
    ({"backbone": "no_such_net"}, "backbone must be one of"),
    ({"mean": (0.5, 0.5)}, "mean and std must have channels=1 entries each"),
    ({"embed_dim": 0}, "embed_dim must be a positive integer"),
    ({"text_width": 0}, "text_width must be a positive integer"),
    ({"context_length": 1}, "context_length must be an integer >= 2"),
])
def test_bad_arguments_are_an_error(kwargs, match):
    arguments = {"backbone": "small_cnn", "channels": 1, "mean": (0.5,), "std": (0.25,),
                 **kwargs}
    with pytest.raises(ValueError, match=match):
        build_two_tower(**arguments)
