"""The evaluation of a text-pair run: the retrieval task of a test split (queries, corpus,
relevance), its metrics against a brute-force ranking of the run's own embeddings, what
`contrastkit evaluate` prints and writes, and `contrastkit embed` of a text run."""

import json

import numpy as np
import pytest
import torch

from contrastkit.cli import main
from contrastkit.data import TextPairs, load_paraphrases
from contrastkit.evaluate.text_pairs import embed_sentences, retrieval_task
from contrastkit.models.sentence import build_sentence_encoder
from contrastkit.train import load_checkpoint, pretrain
from tests.train.tiny_text import SIZES, tiny_text_config


def test_queries_are_the_distinct_anchors_and_the_corpus_every_positive_and_negative():
    texts = ["q1", "q2", "p1", "p2", "p3", "n1", "n2"]
    rows = [("q1", "p1", "n1"), ("q2", "p2", "p1"), ("q1", "p3", "n2")]
    table = torch.tensor([[texts.index(text) for text in row] for row in rows])
    pairs = TextPairs("rows", texts, table[:, 0], table[:, 1], table[:, 2:])
    queries, corpus, relevant = retrieval_task(pairs)
    assert queries == ["q1", "q2"] and corpus == ["p1", "p2", "p3", "n1", "n2"]
    by_query = [relevant.indices[relevant.offsets[q]:relevant.offsets[q + 1]].tolist()
                for q in range(2)]
    # q1 has two positives (p1, p3); p1 is also q2's negative, a distractor of q2
    assert [[corpus[i] for i in rows] for rows in by_query] == [["p1", "p3"], ["p2"]]


def test_plain_sentences_have_no_retrieval_task():
    with pytest.raises(ValueError, match="holds plain sentences: retrieval needs rows"):
        retrieval_task(TextPairs("notes.txt", ["a", "b"], torch.tensor([0, 1])))


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    config = tiny_text_config(tmp_path_factory.mktemp("text"), epochs=1)
    pretrain(config)
    return config


def test_evaluate_prints_and_writes_the_retrieval_of_the_test_split(trained_run, capsys):
    capsys.readouterr()
    assert main(["evaluate", str(trained_run.run_dir), "--pairs", "30", "--no-progress",
                 "--device", "cpu"]) == 0
    printed = capsys.readouterr().out
    results = json.loads((trained_run.run_dir / "eval.json").read_text())
    assert (results["retrieval_queries"], results["retrieval_corpus"]) == (
        SIZES["test"], 2 * SIZES["test"])
    assert f"({SIZES['test']} queries, {2 * SIZES['test']} documents: chance R@1 1.25 %)" \
        in printed
    line = next(line for line in printed.splitlines() if "query -> corpus" in line)
    assert f"R@1 {results['query_to_corpus_r1']:6.2f} %" in line
    assert f"nDCG@10 {results['query_to_corpus_ndcg10']:.4f}" in line
    assert "linear_top1" not in results and results["pairs"] == 30
    assert "matryoshka" not in results and "each prefix" not in printed  # no matryoshka_dims
    assert "over 30 text pairs" in printed

    # the recalls and MRR against a brute-force ranking of the run's own embeddings
    config = trained_run
    encoder = build_sentence_encoder(config.projector_out, config.context_length,
                                     config.text_width, config.text_layers)
    encoder.load_state_dict(load_checkpoint(config.run_dir)["model"])
    test = load_paraphrases("test", rows=SIZES["test"])
    queries, corpus, _ = retrieval_task(test)
    u = torch.nn.functional.normalize(embed_sentences(encoder, queries, "cpu"), dim=1)
    c = torch.nn.functional.normalize(embed_sentences(encoder, corpus, "cpu"), dim=1)
    scores = u @ c.T
    ranks = []
    for anchor, positive in zip(test.anchors.tolist(), test.positives.tolist(), strict=True):
        row = scores[queries.index(test.texts[anchor])]
        own = row[corpus.index(test.texts[positive])]
        ranks.append(int((row >= own).sum()))  # the positive itself is the 1; ties count
    ranks = torch.tensor(ranks)
    for k in (1, 5, 10):
        assert results[f"query_to_corpus_r{k}"] == pytest.approx(
            100.0 * float((ranks <= k).double().mean()))
    mrr = float(torch.where(ranks <= 10, 1.0 / ranks, 0.0).mean())
    assert results["query_to_corpus_mrr10"] == pytest.approx(mrr)


def test_embed_writes_every_distinct_text_of_a_split(trained_run, tmp_path):
    out = tmp_path / "test.npz"
    assert main(["embed", str(trained_run.run_dir), "--split", "test", "--out", str(out),
                 "--no-progress", "--device", "cpu"]) == 0
    arrays = np.load(out)
    test = load_paraphrases("test", rows=SIZES["test"])
    assert arrays["texts"].tolist() == list(test.texts)
    assert arrays["embeddings"].shape == (len(test.texts), trained_run.projector_out)
    assert arrays["features"].shape == (len(test.texts), trained_run.text_width)
