"""The byte tokenizer and the small causal text encoder."""

import pytest
import torch

from contrastkit.models import ByteTokenizer, TextEncoder


def small_encoder(seed: int = 0, context_length: int = 12, width: int = 16) -> TextEncoder:
    torch.manual_seed(seed)
    return TextEncoder(ByteTokenizer.vocab_size, context_length, width=width, layers=2,
                       heads=2)


def test_the_tokenizer_writes_start_bytes_end_then_padding():
    tokenizer = ByteTokenizer(context_length=8)
    tokens = tokenizer(["ab", ""])
    assert tokens.dtype == torch.long and tokens.shape == (2, 8)
    assert tokens[0].tolist() == [1, ord("a") + 3, ord("b") + 3, 2, 0, 0, 0, 0]
    assert tokens[1].tolist() == [1, 2, 0, 0, 0, 0, 0, 0]
    assert (ByteTokenizer.pad_id, ByteTokenizer.sot_id, ByteTokenizer.eot_id) == (0, 1, 2)
    assert tokenizer.vocab_size == 259 and tokenizer.context_length == 8


def test_the_tokenizer_encodes_utf8_bytes():
    tokens = ByteTokenizer(context_length=6)(["é"])  # two bytes: 0xC3 0xA9
    assert tokens[0].tolist() == [1, 0xC3 + 3, 0xA9 + 3, 2, 0, 0]
    every_byte = ByteTokenizer(context_length=300)([bytes(range(256)).decode("latin-1")])
    assert every_byte.max() < ByteTokenizer.vocab_size


def test_a_long_text_is_truncated_and_keeps_its_end_token():
    tokenizer = ByteTokenizer(context_length=6)
    exact, long = tokenizer(["abcd", "abcdefgh"])
    assert exact.tolist() == [1, *(c + 3 for c in b"abcd"), 2]  # fits exactly: no padding
    assert long.tolist() == [1, *(c + 3 for c in b"abcd"), 2]  # the first 4 bytes, then end
    assert ByteTokenizer(context_length=2)(["anything"]).tolist() == [[1, 2]]


def test_a_single_string_is_one_text_and_an_empty_list_no_rows():
    tokenizer = ByteTokenizer(context_length=5)
    assert torch.equal(tokenizer("hi"), tokenizer(["hi"]))
    assert tokenizer([]).shape == (0, 5)


@pytest.mark.parametrize("bad", [["ok", 3], [b"bytes"], [None]])
def test_a_text_that_is_not_a_string_is_an_error(bad):
    with pytest.raises(ValueError, match="texts must be strings.*at index"):
        ByteTokenizer()(bad)


@pytest.mark.parametrize("bad", [1, 0, "32", 2.0, True])
def test_the_context_length_must_hold_the_start_and_end_tokens(bad):
    with pytest.raises(ValueError, match="context_length must be an integer >= 2"):
        ByteTokenizer(bad)


def test_the_encoder_gives_width_features_per_text():
    encoder = small_encoder()
    tokens = ByteTokenizer(12)(["a cat", "a dog on a mat", ""])
    features = encoder(tokens)
    assert features.shape == (3, 16) and encoder.features_dim == 16
    assert torch.isfinite(features).all()
    assert encoder.vocab_size == 259 and encoder.context_length == 12


def test_tokens_after_the_end_token_do_not_change_the_features_and_tokens_before_do():
    """The causal mask: the features at the end-of-text token see only what comes before."""
    encoder = small_encoder().eval()
    tokens = ByteTokenizer(12)(["a cat", "dog"])
    after, before = tokens.clone(), tokens.clone()
    after[0, 7:] = torch.tensor([50, 60, 70, 80, 2])  # after "a cat"'s end token (index 6)
    after[1, 5:] = 99
    before[0, 2] = 200  # inside "a cat"
    with torch.no_grad():
        reference, changed_after, changed_before = (encoder(t) for t in (tokens, after, before))
    torch.testing.assert_close(changed_after, reference, rtol=0, atol=1e-6)
    assert not torch.allclose(changed_before[0], reference[0], atol=1e-3)
    torch.testing.assert_close(changed_before[1], reference[1], rtol=0, atol=1e-6)


def test_fewer_columns_than_the_context_give_the_same_features():
    """Padding is invisible: the same texts padded to 12 or cut to their longest give the
    same features, and each text's features do not depend on the others in the batch."""
    encoder = small_encoder().eval()
    tokens = ByteTokenizer(12)(["a cat", "dog"])
    with torch.no_grad():
        full = encoder(tokens)
        cut = encoder(tokens[:, :7])
        alone = encoder(tokens[1:, :5])
    torch.testing.assert_close(cut, full, rtol=0, atol=1e-5)
    torch.testing.assert_close(alone[0], full[1], rtol=0, atol=1e-5)


def test_training_and_evaluation_modes_agree():
    """No dropout; PyTorch's inference fast path (eval) computes the same features."""
    encoder = small_encoder()
    tokens = ByteTokenizer(12)(["a cat", "a dog on a mat", "x"])
    with torch.no_grad():
        trained = encoder.train()(tokens)
        evaluated = encoder.eval()(tokens)
    torch.testing.assert_close(evaluated, trained, rtol=1e-5, atol=1e-5)


def test_the_features_are_the_same_under_the_same_seed_and_differ_under_another():
    tokens = ByteTokenizer(12)(["a cat", "dog"])
    first, again, other = (small_encoder(seed)(tokens) for seed in (0, 0, 1))
    assert torch.equal(first, again)
    assert not torch.allclose(first, other)


def test_gradients_reach_the_embeddings_and_every_layer():
    encoder = small_encoder()
    encoder(ByteTokenizer(12)(["a cat", "a dog on a mat"])).square().sum().backward()
    for name, parameter in encoder.named_parameters():
        assert parameter.grad is not None, name
    assert encoder.token_embedding.weight.grad.abs().sum() > 0
    assert encoder.positional_embedding.grad.abs().sum() > 0
    assert all(p.grad.abs().sum() > 0 for p in encoder.transformer.layers[0].parameters())


def test_a_sequence_without_the_end_token_is_an_error():
    tokens = ByteTokenizer(12)(["a cat", "dog"])
    tokens[1, 4] = 0  # dog's end token gone
    with pytest.raises(ValueError, match="end-of-text token eot_id=2"):
        small_encoder()(tokens)


def test_the_end_token_is_configurable():
    """open_clip's SimpleTokenizer ends with 49407: the first such token is pooled."""
    torch.manual_seed(0)
    encoder = TextEncoder(49408, 8, width=16, layers=1, heads=2, eot_id=49407).eval()
    tokens = torch.tensor([[49406, 320, 1929, 49407, 0, 0, 0, 0]])
    changed = tokens.clone()
    changed[0, 4:] = torch.tensor([49407, 5, 6, 7])
    with torch.no_grad():
        torch.testing.assert_close(encoder(changed), encoder(tokens), rtol=0, atol=1e-6)


@pytest.mark.parametrize("tokens, match", [
    (torch.ones(2, 12), "LongTensor of shape"),
    (torch.ones(12, dtype=torch.long), "LongTensor of shape"),
    (torch.full((2, 13), 2), "1 to context_length=12 columns"),
])
def test_tokens_of_the_wrong_type_or_shape_are_an_error(tokens, match):
    with pytest.raises(ValueError, match=match):
        small_encoder()(tokens)


@pytest.mark.parametrize("kwargs, match", [
    ({"width": 10, "heads": 4}, "width must be a multiple of heads"),
    ({"layers": 0}, "layers must be a positive integer"),
    ({"eot_id": 259}, r"eot_id must be a token id in \[0, vocab_size=259\)"),
])
def test_bad_sizes_are_an_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TextEncoder(259, 12, **kwargs)
