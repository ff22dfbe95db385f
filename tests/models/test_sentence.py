"""The sentence encoder of task=text_pairs: the byte-level text encoder with dropout (SimCSE's
augmentation) and a linear projection."""

import pytest
import torch

from contrastkit.models import ByteTokenizer, TextEncoder
from contrastkit.models.sentence import SentenceEncoder, build_sentence_encoder
from contrastkit.models.text import byte_text_encoder

TEXTS = ["a small red dog runs", "at night, the big cat sleeps", "x"]


def test_a_sentence_encoder_embeds_texts_and_gives_its_features():
    torch.manual_seed(0)
    encoder = build_sentence_encoder(embed_dim=8, context_length=40, text_width=32,
                                     text_layers=1)
    tokens = encoder.tokenizer(TEXTS)
    assert isinstance(encoder.tokenizer, ByteTokenizer) and tokens.shape == (3, 40)
    assert encoder(tokens).shape == (3, 8) and encoder.features(tokens).shape == (3, 32)
    assert (encoder.embed_dim, encoder.features_dim) == (8, 32)
    assert torch.allclose(encoder(tokens), encoder.projection(encoder.features(tokens)))


def test_dropout_makes_two_passes_differ_in_training_and_never_in_eval():
    torch.manual_seed(0)
    encoder = build_sentence_encoder(embed_dim=8, context_length=40, text_width=32,
                                     text_layers=2, dropout=0.1)
    tokens = encoder.tokenizer(TEXTS)
    encoder.train()
    assert not torch.allclose(encoder(tokens), encoder(tokens))
    encoder.eval()
    assert torch.equal(encoder(tokens), encoder(tokens))
    still = build_sentence_encoder(embed_dim=8, context_length=40, text_width=32)
    assert torch.equal(still(tokens), still(tokens))  # no dropout, the default: CLIP's


@pytest.mark.parametrize("dropout", [-0.1, 1.0, True, "0.1"])
def test_a_bad_dropout_is_an_error_naming_it(dropout):
    with pytest.raises(ValueError, match="dropout"):
        TextEncoder(ByteTokenizer.vocab_size, 8, width=16, layers=1, heads=1, dropout=dropout)


@pytest.mark.parametrize("width, heads", [(64, 2), (32, 1), (48, 1), (16, 1), (96, 3)])
def test_the_byte_text_encoder_takes_width_over_32_heads_dividing_the_width(width, heads):
    tokenizer, text = byte_text_encoder(16, width, 1)
    assert tokenizer.context_length == 16 and text.features_dim == width
    assert text.transformer.layers[0].self_attn.num_heads == heads


@pytest.mark.parametrize("kwargs, match", [
    ({"text_width": 0}, "text_width must be a positive integer"),
    ({"embed_dim": 0}, "embed_dim must be a positive integer"),
    ({"context_length": 1}, "context_length must be an integer >= 2"),
])
def test_bad_sizes_are_errors_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_sentence_encoder(**kwargs)


def test_any_text_encoder_with_features_dim_can_be_the_sentence_encoder():
    _, text = byte_text_encoder(16, 16, 1)
    encoder = SentenceEncoder(text, ByteTokenizer(16), embed_dim=4)
    assert encoder(encoder.tokenizer(["ab", "c"])).shape == (2, 4)
