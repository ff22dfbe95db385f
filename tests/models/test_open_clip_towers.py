"""open_clip's towers as a two-tower model: tiny configurations, local checkpoints, no download.

The tests that need open_clip are skipped when it is not installed (pip install
'contrastkit[clip]'); every test runs with the network cut, so a download would fail them."""

import socket
import sys

import pytest
import torch

from contrastkit.models import (
    OPEN_CLIP_CONFIGS,
    OpenClipTwoTower,
    TwoTowerBase,
    open_clip_model_names,
    open_clip_offline_model_names,
    open_clip_two_tower,
    register_open_clip_configs,
)
from contrastkit.models.open_clip_towers import open_clip_text_encoder

TEXTS = ["a photo of a zero", "a one", "two", "the digit three"]


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection attempt fails the test."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("a test of open_clip towers tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def open_clip():
    return pytest.importorskip(
        "open_clip", reason="open_clip_torch is not installed (pip install 'contrastkit[clip]')")


def tiny(seed: int = 0, checkpoint=None) -> OpenClipTwoTower:
    torch.manual_seed(seed)
    return open_clip_two_tower("ck-tiny-vit", checkpoint=checkpoint).eval()


def images(batch: int = 4, channels: int = 3, size: int = 32, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(batch, channels, size, size, generator=generator)


def outputs(model, tokens) -> tuple[torch.Tensor, ...]:
    with torch.no_grad():
        return (model.image_features(images()), model.encode_image(images()),
                model.encode_text(tokens))


def test_without_open_clip_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "open_clip", None)  # import open_clip raises ImportError
    with pytest.raises(ValueError, match=r"pip install 'contrastkit\[clip\]'"):
        open_clip_two_tower("ck-tiny-vit")


def test_the_tiny_model_has_the_two_tower_interface(open_clip):
    model = tiny()
    tokens = model.tokenizer(TEXTS)
    assert isinstance(model, TwoTowerBase)
    assert isinstance(model.tokenizer, open_clip.SimpleTokenizer)
    assert tokens.dtype == torch.long and tokens.shape == (4, 32)
    features, image_embeddings, text_embeddings = outputs(model, tokens)
    assert features.shape == (4, 64) and model.features_dim == 64
    assert image_embeddings.shape == (4, 64) and text_embeddings.shape == (4, 64)
    assert model.embed_dim == 64 and model.image_size == (32, 32)
    norms = torch.cat([image_embeddings.norm(dim=1), text_embeddings.norm(dim=1)])
    assert not torch.allclose(norms, torch.ones_like(norms), atol=1e-2)  # not normalized
    with torch.no_grad():
        torch.testing.assert_close(model.features(images()), features)


def test_the_tiny_configuration_is_the_one_documented(open_clip):
    model = tiny()
    visual, clip = model.clip.visual, model.clip
    assert visual.conv1.kernel_size == (8, 8) and visual.conv1.out_channels == 64
    assert len(visual.transformer.resblocks) == 2
    assert visual.transformer.resblocks[0].attn.num_heads == 2
    assert clip.token_embedding.num_embeddings == 49408  # SimpleTokenizer's vocabulary
    assert clip.positional_embedding.shape == (32, 64)
    assert len(clip.transformer.resblocks) == 2
    assert clip.transformer.resblocks[0].attn.num_heads == 2


def test_the_logit_scale_and_bias_are_not_part_of_the_model(open_clip):
    model = tiny()
    names = [name for name, _ in model.named_parameters()] + list(model.state_dict())
    assert not any("logit" in name for name in names)
    assert not hasattr(model.clip, "logit_scale") and not hasattr(model.clip, "logit_bias")


def test_image_features_are_the_pooled_output_before_the_projection(open_clip):
    model = tiny()
    features, image_embeddings, _ = outputs(model, model.tokenizer(TEXTS))
    torch.testing.assert_close(features @ model.clip.visual.proj, image_embeddings)


def test_images_are_normalized_with_the_model_mean_and_std_and_resized(open_clip):
    model = tiny()
    mean = torch.tensor(open_clip.OPENAI_DATASET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(open_clip.OPENAI_DATASET_STD).view(1, 3, 1, 1)
    x = images()
    torch.testing.assert_close(model.prepare(x), (x - mean) / std)
    with torch.no_grad():
        torch.testing.assert_close(model.encode_image(x),
                                   model.clip.encode_image((x - mean) / std))
    gray = images(channels=1, size=28)
    assert model.prepare(gray).shape == (4, 3, 32, 32)
    torch.testing.assert_close(model.prepare(gray), model.prepare(gray.expand(-1, 3, -1, -1)))
    assert model.prepare(torch.rand(2, 3, 40, 64)).shape == (2, 3, 32, 32)
    with pytest.raises(ValueError, match="images must have shape"):
        model.prepare(torch.rand(2, 2, 32, 32))


def test_forward_dispatches_to_the_tower_named(open_clip):
    model = tiny()
    tokens = model.tokenizer(TEXTS)
    with torch.no_grad():
        assert torch.equal(model(images()), model.encode_image(images()))
        assert torch.equal(model(tokens, tower="text"), model.encode_text(tokens))
    with pytest.raises(ValueError, match="tower must be one of 'image', 'text'"):
        model(tokens, tower="caption")


def test_gradients_flow_to_both_towers(open_clip):
    model = tiny().train()
    z_image = torch.nn.functional.normalize(model(images()), dim=1)
    z_text = torch.nn.functional.normalize(model(model.tokenizer(TEXTS), tower="text"), dim=1)
    torch.nn.functional.cross_entropy(z_image @ z_text.T / 0.1, torch.arange(4)).backward()
    visual = [p for name, p in model.named_parameters() if name.startswith("clip.visual.")]
    text = [p for name, p in model.named_parameters() if not name.startswith("clip.visual.")]
    assert visual and text
    for group in (visual, text):
        assert all(p.grad is not None for p in group)
        assert sum(p.grad.abs().sum() for p in group) > 0


def test_the_model_is_the_same_under_the_same_seed_and_differs_under_another(open_clip):
    tokens = tiny().tokenizer(TEXTS)
    first, again, other = (outputs(tiny(seed), tokens) for seed in (0, 0, 1))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not any(torch.allclose(a, b) for a, b in zip(first, other, strict=True))


def _save(state: dict, path, layout: str):
    if layout == "safetensors":
        from safetensors.torch import save_file

        save_file({key: value.contiguous() for key, value in state.items()}, str(path))
    elif layout == "training":  # open_clip's training checkpoint, saved from a DDP model
        torch.save({"epoch": 3, "state_dict": {f"module.{k}": v for k, v in state.items()}},
                   path)
    else:
        torch.save(state, path)


@pytest.mark.parametrize("layout, suffix", [("plain", ".pt"), ("training", ".pt"),
                                            ("safetensors", ".safetensors")])
def test_an_open_clip_checkpoint_file_loads_back_identically(open_clip, tmp_path, layout,
                                                             suffix):
    """A randomly initialised open_clip model (with its logit_scale) saved to a file gives,
    loaded through open_clip_two_tower, the same embeddings as the model saved."""
    register_open_clip_configs()
    torch.manual_seed(7)
    saved = open_clip.create_model("ck-tiny-vit").eval()
    path = tmp_path / f"tiny{suffix}"
    _save(saved.state_dict(), path, layout)
    model = tiny(seed=0, checkpoint=path)
    tokens = model.tokenizer(TEXTS)
    with torch.no_grad():
        assert torch.equal(model.encode_text(tokens), saved.encode_text(tokens))
        assert torch.equal(model.encode_image(images()),
                           saved.encode_image(model.prepare(images())))


def test_a_two_tower_state_dict_loads_back_identically(open_clip, tmp_path):
    model = tiny(seed=3)
    path = tmp_path / "two_tower.pt"
    torch.save(model.state_dict(), path)
    loaded = tiny(seed=0, checkpoint=str(path))
    tokens = model.tokenizer(TEXTS)
    expected = outputs(model, tokens)
    assert all(torch.equal(a, b) for a, b in zip(outputs(loaded, tokens), expected, strict=True))
    fresh = outputs(tiny(seed=0), tokens)  # what the checkpoint replaced
    assert not any(torch.allclose(a, b) for a, b in zip(fresh, expected, strict=True))


def test_a_checkpoint_that_does_not_fit_is_an_error(open_clip, tmp_path):
    state = tiny().clip.state_dict()
    del state["visual.proj"]
    torch.save(state, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match="does not fit the open_clip model 'ck-tiny-vit'.*"
                                         "visual.proj"):
        tiny(checkpoint=tmp_path / "partial.pt")
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="could not be read as a state dict"):
        tiny(checkpoint=tmp_path / "notes.txt")


def test_a_missing_checkpoint_is_an_error_listing_the_files_there(open_clip, tmp_path):
    (tmp_path / "model.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="checkpoint must be a local file.*does not exist; "
                                         "the files in .*: model.pt"):
        tiny(checkpoint=tmp_path / "modle.pt")


@pytest.mark.parametrize("name", ["ViT-Z-99", "ck-huge-vit", None, "hf-hub:org/model"])
def test_an_unknown_model_name_is_an_error_listing_the_names(open_clip, name):
    with pytest.raises(ValueError, match="model_name must be an open_clip architecture, one "
                                         "of (?=.*ck-tiny-vit)(?=.*ViT-B-32)"):
        open_clip_two_tower(name)


@pytest.mark.parametrize("name, reason", [
    ("ViT-B-16-SigLIP", "Hugging Face tokenizer 'timm/ViT-B-16-SigLIP'"),
    ("roberta-ViT-B-32", "Hugging Face model 'roberta-base'"),
])
def test_a_model_that_needs_a_download_is_refused_before_anything_is_built(open_clip, name,
                                                                           reason):
    with pytest.raises(ValueError, match=f"needs a download \\(its .*{reason}.*\\), and "
                                         "contrastkit never downloads; the names that work "
                                         "offline: .*ViT-B-32"):
        open_clip_two_tower(name)


def test_the_offline_names(open_clip):
    offline = open_clip_offline_model_names()
    assert {"ck-tiny-vit", "ck-small-vit", "ViT-B-32", "RN50", "convnext_base"} <= set(offline)
    assert not {"ViT-B-16-SigLIP", "ViT-B-16-SigLIP2", "roberta-ViT-B-32",
                "ViT-SO400M-14-SigLIP"} & set(offline)
    assert set(offline) < set(open_clip_model_names())


def test_the_configurations_are_registered_with_open_clip(open_clip):
    register_open_clip_configs()
    register_open_clip_configs()  # idempotent
    assert set(OPEN_CLIP_CONFIGS) <= set(open_clip.list_models())
    assert open_clip.get_model_config("ck-small-vit")["embed_dim"] == 128
    assert open_clip.get_tokenizer("ck-tiny-vit").context_length == 32


TINY_TEXT = {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}


@pytest.mark.parametrize("config, features_dim", [
    ({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": [1, 1, 1, 1], "width": 8,
                                      "head_width": 8}, "text_cfg": TINY_TEXT}, 32),
    ({"embed_dim": 32, "vision_cfg": {"image_size": 32, "timm_model_name": "test_resnet",
                                      "timm_pool": "avg", "timm_proj": "linear"},
      "text_cfg": TINY_TEXT}, None),
], ids=["modified-resnet", "timm-trunk"])
def test_other_visual_towers(open_clip, monkeypatch, config, features_dim):
    """A ResNet's attention pooling projects: its features are its output; a timm trunk's
    features are the trunk's pooled output, before the projection head."""
    register_open_clip_configs()
    monkeypatch.setitem(open_clip.factory._MODEL_CONFIGS, "ck-test-tower", config)
    torch.manual_seed(0)
    model = open_clip_two_tower("ck-test-tower").eval()
    features, image_embeddings, text_embeddings = outputs(model, model.tokenizer(TEXTS))
    assert image_embeddings.shape == (4, 32) and text_embeddings.shape == (4, 32)
    assert features.shape == (4, model.features_dim)
    if features_dim is not None:
        assert model.features_dim == features_dim
        torch.testing.assert_close(features, image_embeddings)
    else:
        assert model.features_dim == model.clip.visual.trunk.num_features
        with torch.no_grad():
            torch.testing.assert_close(model.clip.visual.head(features), image_embeddings)


def test_the_text_tower_alone_is_a_sentence_encoder_with_the_checkpoint_s_weights(
        open_clip, tmp_path):
    """task=text_pairs with clip_model: the text tower of the same model, without the image
    tower, embedding as the two-tower model's encode_text, from a checkpoint file too."""
    model = tiny(seed=3)
    path = tmp_path / "two_tower.pt"
    torch.save(model.state_dict(), path)
    text = open_clip_text_encoder("ck-tiny-vit", path).eval()
    assert not hasattr(text.clip, "visual")
    assert not any(name.startswith("clip.visual") for name in text.state_dict())
    tokens = text.tokenizer(TEXTS)
    assert isinstance(text.tokenizer, open_clip.SimpleTokenizer)
    with torch.no_grad():
        assert torch.equal(text(tokens), model.encode_text(tokens))
        assert torch.equal(text.features(tokens), text(tokens))
    assert text.embed_dim == text.features_dim == 64
