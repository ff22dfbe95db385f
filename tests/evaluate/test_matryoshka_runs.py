"""Runs trained with ``matryoshka_dims``: their loss parts per prefix, and ``contrastkit
evaluate``'s results per prefix (printed, and in eval.json under ``"matryoshka"``), each against
the measurement recomputed here on the prefix of the run's own embeddings; the kNN of a views run
and the retrieval of an image-text run per prefix, measured on untrained encoders."""

import json

import pytest
import torch
from torch.utils.data import Subset

from contrastkit.cli import main
from contrastkit.commands import evaluate as evaluate_command
from contrastkit.data import load_dataset
from contrastkit.evaluate import extract_features
from contrastkit.evaluate.image_text import embed_images, embed_texts, image_text_measurements
from contrastkit.evaluate.knn import knn_accuracy
from contrastkit.evaluate.prefixes import PREFIXES, knn_per_prefix
from contrastkit.evaluate.retrieval import retrieval_recalls
from contrastkit.evaluate.text_pairs import embed_sentences, retrieval_task, text_retrieval
from contrastkit.train import load_checkpoint, pretrain
from contrastkit.train.inputs import built_in_encoder
from contrastkit.train.text_pairs import build_sentence_model
from tests.train.tiny import tiny_config
from tests.train.tiny_captions import tiny_image_text_config
from tests.train.tiny_text import tiny_text_config


def _evaluate(run_dir, capsys) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["evaluate", str(run_dir), "--pairs", "30", "--knn-k", "20", "--no-progress",
                 "--device", "cpu"]) == 0
    return json.loads((run_dir / "eval.json").read_text()), capsys.readouterr().out


def test_the_commands_key_is_the_evaluations():
    assert evaluate_command.PREFIXES == PREFIXES


def test_a_text_pair_run_logs_each_prefix_and_evaluates_each(tmp_path, capsys):
    config = tiny_text_config(tmp_path, epochs=1, matryoshka_dims="8,16",
                              matryoshka_weights="1,2")
    pretrain(config)
    logged = json.loads((config.run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert {"info_nce@8", "info_nce@16"} <= set(logged)
    assert logged["loss"] == pytest.approx(logged["info_nce@8"] + 2 * logged["info_nce@16"],
                                           rel=1e-5)
    results, printed = _evaluate(config.run_dir, capsys)
    assert list(results[PREFIXES]) == ["8", "16"]
    encoder = build_sentence_model(config)
    encoder.load_state_dict(load_checkpoint(config.run_dir)["model"])
    queries, corpus, relevant = retrieval_task(load_dataset(config.dataset, "test"))
    query_rows = embed_sentences(encoder, queries, "cpu")
    corpus_rows = embed_sentences(encoder, corpus, "cpu")
    for dim in (8, 16):
        expected = text_retrieval(query_rows[:, :dim], corpus_rows[:, :dim], relevant)
        assert results[PREFIXES][str(dim)] == pytest.approx(expected)
        line = next(line for line in printed.splitlines() if f"{dim:>5} dims  query" in line)
        assert f"nDCG@10 {expected['query_to_corpus_ndcg10']:.4f}" in line
    full = {key: results[key] for key in results[PREFIXES]["16"]}  # 16: the whole embedding
    assert results[PREFIXES]["16"] == pytest.approx(full)


def test_the_knn_of_each_prefix_is_that_of_the_projected_embeddings_prefix():
    config = tiny_config("unused", matryoshka_dims="4,16")
    train, test = (Subset(load_dataset(config.dataset, split), range(200))
                   for split in ("train", "test"))
    train.info = test.info = train.dataset.info  # type: ignore[attr-defined]
    encoder = built_in_encoder(config, train.dataset, train.dataset[0][0])
    got = knn_per_prefix(encoder, train, test, torch.device("cpu"), (4, 16), k=20)
    bank, bank_labels = extract_features(encoder, train, projector=True)
    queries, labels = extract_features(encoder, test, projector=True)
    for dim in (4, 16):
        knn = knn_accuracy(bank[:, :dim], bank_labels, queries[:, :dim], labels,
                           train.info.num_classes, 20, 0.1)
        assert got[str(dim)] == pytest.approx({"knn_top1": knn["top1"],
                                               "knn_top5": knn["top5"]})
    assert got["4"] != got["16"]


@pytest.mark.slow  # trains a digits run (about 10 s on 2 cores)
def test_a_views_run_evaluates_the_knn_of_each_prefix_of_the_embedding(tmp_path, capsys):
    config = tiny_config(tmp_path, epochs=1, vrns=0, matryoshka_dims="4,8,16")
    pretrain(config)
    results, printed = _evaluate(config.run_dir, capsys)
    train, test = (load_dataset(config.dataset, split) for split in ("train", "test"))
    encoder = built_in_encoder(config, train, train[0][0])
    encoder.load_state_dict(load_checkpoint(config.run_dir)["model"])
    bank, bank_labels = extract_features(encoder, train, projector=True)
    queries, labels = extract_features(encoder, test, projector=True)
    for dim in (4, 8, 16):
        knn = knn_accuracy(bank[:, :dim], bank_labels, queries[:, :dim], labels,
                           train.info.num_classes, 20, 0.1)
        assert results[PREFIXES][str(dim)] == pytest.approx(
            {"knn_top1": knn["top1"], "knn_top5": knn["top5"]})
        assert f"{dim:>5} dims  kNN of the embedding  top-1 {knn['top1']:6.2f} %" in printed


def test_image_text_retrieval_is_measured_on_each_prefix():
    config = tiny_image_text_config("unused", matryoshka_dims="4,16")
    train, test = (load_dataset(config.dataset, split) for split in ("train", "test"))
    towers = built_in_encoder(config, train, train[0][0])
    results = image_text_measurements(towers, train, test, "cpu", pairs=30, dims=(4, 16))
    assert list(results[PREFIXES]) == ["4", "16"]
    full = {key: results[key] for key in results[PREFIXES]["16"]}  # 16: the whole embedding
    assert results[PREFIXES]["16"] == pytest.approx(full)
    assert set(full) >= {"image_to_text_r1", "text_to_image_r1", "image_to_text_ndcg10"}
    images, texts = embed_images(towers, test, "cpu"), embed_texts(
        towers, [text for captions in test.captions for text in captions], "cpu")
    owner = torch.repeat_interleave(torch.arange(len(test)), torch.tensor(
        [len(captions) for captions in test.captions]))
    expected = retrieval_recalls(images[:, :4], texts[:, :4], owner, ks=[1, 5, 10])
    assert {key: results[PREFIXES]["4"][key] for key in expected} == pytest.approx(expected)
