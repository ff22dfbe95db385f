"""task=text_pairs: the texts tokenized once and cut to the batch's longest, batches without a
repeated text or class (found at the input, by index), the preset and the settings' checks,
runs with and without negatives, SimCSE, exact resume, gradient caching equal to the plain
step, and the errors a user meets before anything is written."""

import pytest
import torch

from contrastkit.cli import main
from contrastkit.data import TextPairs, load_paraphrases
from contrastkit.models.sentence import build_sentence_encoder
from contrastkit.train import PretrainConfig, load_checkpoint, load_config, loop, pretrain
from contrastkit.train.batches import distinct_batches, epoch_batches, local_batches
from contrastkit.train.checkpoint import seed_everything
from contrastkit.train.text_pairs import TokenizedPairs, trimmed
from tests.train.tiny_text import TINY, tiny_text_config


def _pairs(rows, labels=None):
    """TextPairs of rows of texts (anchor, positive, negatives...)."""
    texts = sorted({text for row in rows for text in row})
    table = torch.tensor([[texts.index(text) for text in row] for row in rows])
    names = sorted(set(labels)) if labels else ()
    label_ids = torch.tensor([names.index(label) for label in labels]) if labels else None
    return TextPairs("rows", texts, table[:, 0], table[:, 1], table[:, 2:], label_ids, names)


def _shared_keys(batch: list[int], keys: torch.Tensor) -> bool:
    """Whether two rows of ``batch`` share a key (a row may hold one key twice)."""
    values = [key for row in batch for key in set(keys[row].tolist())]
    return len(set(values)) < len(values)


def test_distinct_batches_never_repeat_a_key_and_let_waiting_rows_in_first():
    keys = torch.tensor([[0, 1], [2, 1], [3, 4], [5, 6], [7, 8], [9, 10], [11, 0], [12, 13]])
    batches = distinct_batches(keys, 3, torch.arange(8))
    # row 1 shares key 1 with row 0: it waits and opens the second batch; row 6 shares key 0
    # with row 0 only, so it joins the second batch in its turn
    assert batches == [[0, 2, 3], [1, 4, 5]]
    generator = torch.Generator().manual_seed(0)
    keys = torch.randint(0, 60, (200, 3), generator=generator)
    batches = distinct_batches(keys, 8, torch.randperm(200, generator=generator))
    assert batches and not any(_shared_keys(batch, keys) for batch in batches)
    used = [row for batch in batches for row in batch]
    assert len(used) == len(set(used)) and all(len(batch) == 8 for batch in batches)


def test_rows_without_shared_keys_are_batched_as_the_plain_order():
    order = torch.randperm(50, generator=torch.Generator().manual_seed(1))
    batches = distinct_batches(torch.arange(100).view(50, 2), 16, order)
    assert batches == [order[i:i + 16].tolist() for i in (0, 16, 32)]


def test_a_keyed_dataset_s_batches_are_cut_over_processes_as_the_plain_ones():
    dataset = TokenizedPairs(load_paraphrases("train", rows=64), build_sentence_encoder(
        context_length=96, text_width=16, text_layers=1).tokenizer)
    whole = epoch_batches(dataset, 16, seed=3, epoch=1)
    assert whole == local_batches(64, 16, seed=3, epoch=1)  # no text repeats in the corpus
    halves = [epoch_batches(dataset, 16, 3, 1, rank, 2) for rank in (0, 1)]
    assert [a + b for a, b in zip(*halves, strict=True)] == whole


def test_a_batch_never_holds_two_rows_sharing_a_text_or_a_class():
    rows = [("q1", "doc a", "doc x"), ("q2", "doc a", "doc y"), ("q3", "doc b", "q1"),
            ("q4", "doc c", "doc z"), ("q5", "doc d", "doc w"), ("q6", "doc e", "doc v")]
    tokenizer = build_sentence_encoder(context_length=16, text_width=16).tokenizer
    dataset = TokenizedPairs(_pairs(rows), tokenizer)
    for epoch in range(5):
        for batch in epoch_batches(dataset, 2, 0, epoch):
            texts = [dataset.pairs.texts[i] for i in dataset.pairs.row_texts()[batch].flatten()]
            assert len(set(texts)) == len(texts), (epoch, texts)
    labeled = TokenizedPairs(_pairs(rows, labels=["x", "y", "x", "y", "z", "z"]), tokenizer)
    assert labeled.row_keys().shape == (6, 4)
    for epoch in range(5):
        for batch in epoch_batches(labeled, 3, 0, epoch):
            classes = labeled.pairs.labels[batch].tolist()
            assert len(set(classes)) == 3, (epoch, classes)


def test_rows_are_tokenized_once_and_cut_to_the_batch_s_longest_text():
    pairs = _pairs([("a b", "a longer positive", "n"), ("c", "d", "a much longer negative")])
    tokenizer = build_sentence_encoder(context_length=40, text_width=16).tokenizer
    dataset = TokenizedPairs(pairs, tokenizer)
    anchors, labels, positives, negatives = dataset.__getitems__([0])
    assert anchors.shape == (1, len("a longer positive") + 2)  # the batch's longest, + start, end
    assert torch.equal(anchors[0], tokenizer(["a b"])[0, :anchors.shape[1]])
    assert torch.equal(positives[0], tokenizer(["a longer positive"])[0, :anchors.shape[1]])
    assert negatives.shape == (1, 1, anchors.shape[1]) and labels.tolist() == [-1]
    both = dataset.__getitems__([0, 1])
    assert all(part.shape[-1] == len("a much longer negative") + 2 for part in
               (both[0], both[2], both[3]))


def test_cutting_the_padding_leaves_the_embeddings_unchanged():
    torch.manual_seed(0)
    encoder = build_sentence_encoder(embed_dim=8, context_length=64, text_width=32,
                                     text_layers=2).eval()
    tokens = encoder.tokenizer(["short", "a somewhat longer sentence", "mid length"])
    cut = trimmed(tokens, encoder.tokenizer)
    assert cut.shape == (3, len("a somewhat longer sentence") + 2)
    torch.testing.assert_close(encoder(cut), encoder(tokens), rtol=1e-5, atol=1e-6)


def test_simcse_rows_are_the_distinct_texts_each_its_own_positive():
    pairs = _pairs([("a", "b", "c"), ("a", "d", "b")])
    dataset = TokenizedPairs(pairs, build_sentence_encoder(context_length=8,
                                                           text_width=16).tokenizer, "simcse")
    assert dataset.pairs.texts == ("a", "b", "c", "d") and len(dataset) == 4
    anchors, _, positives = dataset.__getitems__([0, 3])
    assert torch.equal(anchors, positives)


def test_the_text_pair_preset_comes_under_the_settings_given_with_it():
    config = load_config(overrides=["task=text_pairs", "epochs=3", "loss=siglip"])
    assert (config.dataset, config.loss, config.vrns, config.optimizer, config.epochs,
            config.name) == ("paraphrases", "siglip", 0.0, "adamw", 3, "paraphrases-text")
    assert load_config(overrides=["task=text_pairs"]).temperature == 0.05
    views = config.with_overrides({"task": "views", "epochs": 9})
    assert views.to_dict() == {**PretrainConfig().to_dict(), "epochs": 9}


@pytest.mark.parametrize(("overrides", "message"), [
    (["text_mode=simcse"], "text_mode=simcse would be ignored with task=views"),
    (["task=image_text", "text_negatives=own"], "would be ignored with task=image_text"),
    (["task=text_pairs", "backbone=resnet18"], "a sentence encoder has no image tower"),
    (["task=text_pairs", "clip_checkpoint=x.pt"], "clip_checkpoint needs clip_model"),
    (["task=text_pairs", "text_mode=simcse"], "needs text_dropout > 0.*text_dropout=0.1"),
    (["task=text_pairs", "text_mode=simcse", "text_dropout=0.1", "text_negatives=own"],
     "text_mode=simcse trains on sentences, without negatives"),
    (["task=text_pairs", "text_mode=triplets"], "text_mode must be one of"),
    (["task=text_pairs", "text_negatives=all"], "text_negatives must be one of"),
    (["task=text_pairs", "text_dropout=1"], r"text_dropout \(a dropout probability\)"),
])
def test_text_settings_that_would_be_ignored_or_are_bad_are_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config(overrides=overrides)


def test_simcse_needs_the_built_in_tower_s_dropout():
    pytest.importorskip("open_clip", reason="needs the clip extra (open_clip_torch)")
    with pytest.raises(ValueError, match="text_mode=simcse needs the built-in text tower"):
        load_config(overrides=["task=text_pairs", "text_mode=simcse",
                               "clip_model=ck-tiny-vit"])


@pytest.mark.parametrize(("changes", "message"), [
    ({"loss": "simclr"}, "gives each row 1 negative.*loss=simclr does not take"),
    ({"loss": "supcon"}, "loss=supcon takes the rows of a class as positives"),
    ({"batch_size": 128}, "has 64 rows, fewer than batch_size=128"),
    ({"dataset": "digits"}, "task=text_pairs needs a text-pair dataset"),
])
def test_what_cannot_train_is_an_error_before_the_run_folder_is_made(tmp_path, changes,
                                                                     message):
    config = tiny_text_config(tmp_path, **changes)
    with pytest.raises(ValueError, match=message):
        pretrain(config)
    assert not config.run_dir.exists()


def test_text_pairs_are_not_images(tmp_path):
    config = load_config(overrides=[f"runs_dir={tmp_path}", f"dataset={TINY}",
                                    "device=cpu"])
    with pytest.raises(ValueError, match=f"dataset={TINY} holds text pairs.*task=text_pairs"):
        pretrain(config)
    with pytest.raises(ValueError, match="holds text pairs"):
        pretrain(config.with_overrides({"task": "image_text", "dataset": TINY}))


def test_plain_sentences_train_with_simcse_and_only_with_it(tmp_path):
    folder = tmp_path / "sentences"
    folder.mkdir()
    (folder / "train.txt").write_text("\n".join(f"sentence number {i}" for i in range(40)))
    config = tiny_text_config(tmp_path, dataset="text_files", data_dir=str(folder))
    with pytest.raises(ValueError, match="holds plain sentences.*text_mode=simcse"):
        pretrain(config)
    result = pretrain(config.with_overrides({"text_mode": "simcse", "text_dropout": 0.1}))
    assert len(result.history) == 2 and result.history[-1]["loss"] > 0


@pytest.mark.parametrize("negatives", ["pool", "own"])
def test_a_run_trains_the_encoder_on_pairs_and_their_negatives(tmp_path, negatives,
                                                              monkeypatch):
    seen = []
    real_step = loop.train_step

    def recording(ctx, anchors, labels, *others):
        seen.append((anchors, *others))
        return real_step(ctx, anchors, labels, *others)

    monkeypatch.setattr(loop, "train_step", recording)
    config = tiny_text_config(tmp_path, text_negatives=negatives)
    result = pretrain(config)
    assert len(result.history) == 2 and len(seen) == 8
    anchors, positives, negative_tokens = seen[0]
    assert anchors.shape[0] == positives.shape[0] == 16 and negative_tokens.shape[:2] == (16, 1)
    seed_everything(config.seed)  # the untrained encoder of the run
    untrained = build_sentence_encoder(config.projector_out, config.context_length,
                                       config.text_width, config.text_layers).state_dict()
    state = load_checkpoint(config.run_dir)["model"]
    assert state.keys() == untrained.keys()
    assert all(not torch.equal(state[key], untrained[key]) for key in
               ("text.token_embedding.weight", "projection.weight"))


def test_a_run_killed_mid_epoch_resumes_exactly(tmp_path, monkeypatch):
    """Checkpoints every 2 steps; the process dies in step 3 of epoch 2: the resumed run draws
    the same batches and dropout masks and ends bitwise where the uninterrupted one ends."""
    straight = pretrain(tiny_text_config(tmp_path / "straight", text_dropout=0.1))
    config = tiny_text_config(tmp_path / "resumed", checkpoint_every=2, text_dropout=0.1)
    real_step, calls = loop.train_step, []

    def dies_in_step_3_of_epoch_2(*args):
        calls.append(1)
        if len(calls) == 4 + 3:
            raise Killed
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", dies_in_step_3_of_epoch_2)
    with pytest.raises(Killed):
        pretrain(config)
    monkeypatch.undo()
    assert load_checkpoint(config.run_dir)["step"] == 2
    resumed = pretrain(config.with_overrides({"checkpoint_every": 0}), resume="last")
    for key, value in straight.encoder.state_dict().items():
        assert torch.equal(value, resumed.encoder.state_dict()[key]), key
    assert straight.history[-1]["loss"] == resumed.history[-1]["loss"]


class Killed(Exception):
    pass


def test_the_online_probe_of_a_text_pair_run_is_its_held_out_ndcg_and_changes_nothing(
        tmp_path):
    """online_probe=true records the held-out nDCG@10 at each epoch's end, the last equal to
    what contrastkit evaluate reports; with dropout on, the weights are bit for bit those of
    the run without it (the probe puts the encoder back in training mode)."""
    from contrastkit.evaluate.run import measure_run

    plain = pretrain(tiny_text_config(tmp_path / "plain", text_dropout=0.1))
    probed = pretrain(tiny_text_config(tmp_path / "probed", text_dropout=0.1,
                                       online_probe="true"))
    for key, value in plain.encoder.state_dict().items():
        assert torch.equal(value, probed.encoder.state_dict()[key]), key
    curve = [epoch["online_ndcg10"] for epoch in probed.history]
    assert len(curve) == 2 and all(0.0 <= value <= 1.0 for value in curve)
    assert "online_ndcg10" not in plain.history[-1]
    final = measure_run(probed.run_dir, device="cpu", pairs=16, progress=False)
    assert curve[-1] == pytest.approx(final["query_to_corpus_ndcg10"], rel=1e-6)


@pytest.mark.parametrize("negatives", ["pool", "own"])
def test_gradient_caching_trains_as_the_plain_step(tmp_path, negatives, float64):
    """Without dropout, a run whose every step is computed by gradient caching (chunks of 4 of
    the 16 rows) ends where the plain run ends, up to float64 rounding."""
    settings = {"text_dropout": 0.0, "text_negatives": negatives, "epochs": 1}
    plain = pretrain(tiny_text_config(tmp_path / "plain", **settings))
    cached = pretrain(tiny_text_config(tmp_path / "cached", grad_cache_chunk=4, **settings))
    for key, value in plain.encoder.state_dict().items():
        torch.testing.assert_close(cached.encoder.state_dict()[key], value, rtol=1e-9,
                                   atol=1e-11)
    assert plain.history[-1]["loss"] == pytest.approx(cached.history[-1]["loss"], rel=1e-9)


def test_an_open_clip_text_tower_trains_on_pairs_and_is_evaluated(tmp_path):
    pytest.importorskip("open_clip", reason="needs the clip extra (open_clip_torch)")
    from contrastkit.evaluate import evaluate_run

    config = tiny_text_config(tmp_path, clip_model="ck-tiny-vit", projector_out=128,
                              text_width=64, text_layers=2, epochs=1)
    result = pretrain(config)
    assert not hasattr(result.encoder.clip, "visual") and len(result.history) == 1
    results = evaluate_run(config.run_dir, pairs=20, progress=False, device="cpu")
    assert 0 <= results["query_to_corpus_r1"] <= results["query_to_corpus_r10"] <= 100


def test_a_malformed_pairs_file_is_one_line_naming_the_file_and_line(tmp_path, capsys):
    folder = tmp_path / "pairs"
    folder.mkdir()
    (folder / "train.csv").write_text("anchor,positive\na,b\nc\n")
    code = main(["pretrain", "task=text_pairs", "dataset=text_files", f"data_dir={folder}",
                 f"runs_dir={tmp_path / 'runs'}", "device=cpu"])
    error = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in error and not (tmp_path / "runs").exists()
    assert error.startswith(f"contrastkit pretrain: error: pairs file {folder / 'train.csv'}, "
                            f"line 3: the row has 1 fields")


def test_a_text_pair_run_reports_its_throughput_in_pairs(tmp_path, capsys):
    """The epoch line counts a batch row as what it is: a pair of texts, not an image."""
    pretrain(tiny_text_config(tmp_path, progress=True))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("epoch ")]
    assert lines and all(" pairs/s, " in line and "img/s" not in line for line in lines)
