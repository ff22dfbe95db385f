"""The evaluation of a text-pair run (``task=text_pairs``), as sentence-embedding users read it:
retrieval of the test split's positives from its anchors, exactly
(:func:`~contrastkit.evaluate.ranking.retrieval_metrics`), and the central paper's similarity
statistics of training pairs.

The retrieval task of a test split of rows ``(anchor, positive[, negatives])``: the queries are
its distinct anchors, the corpus its distinct positives and negatives, and a query's relevant
documents the positives of its rows (one, usually; an anchor repeated with several positives
has several). The negatives stand in the corpus as distractors, so the bundled paraphrases'
hard negatives (one attribute changed) sit beside each query's positive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from contrastkit.data.seeding import derived_generator
from contrastkit.data.text_pairs import TextPairs
from contrastkit.geometry import similarity_stats
from contrastkit.train.progress import ONLINE_RETRIEVAL
from contrastkit.train.text_pairs import trimmed

from .pair_stats import distance_measurements
from .prefixes import PREFIXES, per_prefix
from .ranking import retrieval_metrics
from .relevance import Relevance

BATCH = 256
RECALL_AT = (1, 5, 10)
RANKING_AT = 10
#: The prefix of the retrieval results in eval.json: ``query_to_corpus_r{k}`` ...
DIRECTION = "query_to_corpus"


@torch.no_grad()
def embed_sentences(encoder, texts: list[str], device, features: bool = False,
                    batch_size: int = BATCH) -> torch.Tensor:
    """The sentence encoder's embeddings ``(len(texts), d)`` (with ``features``, its pooled
    features before the projection), in eval mode (no dropout), ``batch_size`` texts a pass."""
    encoder.eval()
    embed = encoder.features if features else encoder
    rows = []
    for start in range(0, len(texts), batch_size):
        tokens = trimmed(encoder.tokenizer(texts[start:start + batch_size]), encoder.tokenizer)
        rows.append(embed(tokens.to(device)).float().cpu())
    return torch.cat(rows)


def text_arrays(encoder, texts: list[str], device) -> dict[str, np.ndarray]:
    """What ``contrastkit embed`` saves of a text-pair run's split: ``features`` (pooled),
    ``embeddings`` (projected, what the loss sees), float32, and ``texts``, row by row."""
    return {"features": embed_sentences(encoder, texts, device, features=True).numpy(),
            "embeddings": embed_sentences(encoder, texts, device).numpy(),
            "texts": np.array(texts)}


def retrieval_task(test: TextPairs) -> tuple[list[str], list[str], Relevance]:
    """The queries, the corpus and each query's relevant corpus rows of ``test`` (module
    docstring)."""
    positives = test.positives
    if positives is None:
        raise ValueError(f"{test.name} holds plain sentences: retrieval needs rows of a query "
                         f"and its positive (anchor, positive[, negatives])")
    queries = torch.unique(test.anchors)
    corpus = torch.unique(torch.cat([positives, test.negatives.flatten()]))
    query_row = torch.searchsorted(queries, test.anchors)
    relevant = torch.searchsorted(corpus, positives)
    pairs = torch.unique(query_row * corpus.shape[0] + relevant)  # sorted by query
    counts = torch.bincount(pairs // corpus.shape[0], minlength=queries.shape[0])
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return ([test.texts[i] for i in queries.tolist()], [test.texts[i] for i in corpus.tolist()],
            Relevance(offsets, pairs % corpus.shape[0]))


def text_pair_measurements(encoder, train: TextPairs, test: TextPairs, device,
                           pairs: int = 5000, seed: int = 0, delta_plus: float = 0.1,
                           delta_minus: float = 0.5, dims: Sequence[int] = ()) -> dict:
    """What ``contrastkit evaluate`` reports of a text-pair run:

    - retrieval of the test split (module docstring) by cosine similarity, ties against the
      model: ``query_to_corpus_r1``, ``_r5``, ``_r10`` (%, the queries with a relevant document
      among the first k, as the image-text recalls), ``query_to_corpus_mrr10``,
      ``query_to_corpus_ndcg10`` and ``query_to_corpus_map_r`` (in ``[0, 1]``), with
      ``retrieval_queries`` and ``retrieval_corpus``, the sizes (a k above the corpus is left
      out);
    - with ``dims`` (a run's ``matryoshka_dims``), those retrieval results of each prefix of the
      embeddings (:mod:`~contrastkit.evaluate.prefixes`, under ``"matryoshka"``);
    - the central paper's Table 1 statistics (``neg_sim_var``, ``neg_sim_mean``,
      ``pos_sim_mean``) and LMCL's margin measures of ``pairs`` training rows (anchor and
      positive; plain sentences: the sentence twice, which without dropout is the same
      embedding), drawn with ``seed``; the negatives are the other rows' positives.
    """
    queries, corpus, relevant = retrieval_task(test)
    query_embeddings = embed_sentences(encoder, queries, device)
    corpus_embeddings = embed_sentences(encoder, corpus, device)

    def measure(query_rows: torch.Tensor, corpus_rows: torch.Tensor) -> dict[str, object]:
        return text_retrieval(query_rows, corpus_rows, relevant)

    results = measure(query_embeddings, corpus_embeddings)
    results.update({"retrieval_queries": len(queries), "retrieval_corpus": len(corpus)})
    if dims:
        results[PREFIXES] = per_prefix(dims, measure, query_embeddings, corpus_embeddings)
    u, v = training_pairs(encoder, train, device, pairs, seed)
    stats = similarity_stats(u, v)
    results.update({"neg_sim_var": stats.negative_var, "neg_sim_mean": stats.negative_mean,
                    "pos_sim_mean": stats.positive_mean, "pairs": stats.positive_count,
                    **distance_measurements(u, v, delta_plus, delta_minus)})
    return results


def text_retrieval(query_embeddings: torch.Tensor, corpus_embeddings: torch.Tensor,
                   relevant: Relevance) -> dict[str, object]:
    """The retrieval results of :func:`text_pair_measurements` (``query_to_corpus_r1`` ...
    ``query_to_corpus_map_r``) of these embeddings, by cosine similarity."""
    ks = tuple(k for k in RECALL_AT if k <= corpus_embeddings.shape[0])  # RANKING_AT among them
    metrics = retrieval_metrics(query_embeddings, corpus_embeddings, relevant, ks=ks)
    results: dict[str, object] = {f"{DIRECTION}_r{k}": 100.0 * metrics[f"hit@{k}"] for k in ks}
    if f"mrr@{RANKING_AT}" in metrics:
        results[f"{DIRECTION}_mrr{RANKING_AT}"] = metrics[f"mrr@{RANKING_AT}"]
        results[f"{DIRECTION}_ndcg{RANKING_AT}"] = metrics[f"ndcg@{RANKING_AT}"]
    results[f"{DIRECTION}_map_r"] = metrics["map@r"]
    return results


def held_out_retrieval(encoder, test: TextPairs, device) -> dict[str, object]:
    """The retrieval of ``test``'s positives from its anchors (module docstring) by cosine
    similarity, ties against the model: ``query_to_corpus_r1``, ``_r5``, ``_r10`` (%),
    ``query_to_corpus_mrr10``, ``query_to_corpus_ndcg10`` and ``query_to_corpus_map_r``, with
    ``retrieval_queries`` and ``retrieval_corpus``, the sizes (a k above the corpus is left
    out)."""
    queries, corpus, relevant = retrieval_task(test)
    results = text_retrieval(embed_sentences(encoder, queries, device),
                             embed_sentences(encoder, corpus, device), relevant)
    results.update({"retrieval_queries": len(queries), "retrieval_corpus": len(corpus)})
    return results

class OnlineRetrieval:
    """The held-out retrieval of a text-pair run at each epoch's end (``pretrain
    task=text_pairs online_probe=true``): the nDCG@10 of ``test``'s positives retrieved from
    its anchors (:func:`held_out_retrieval`, the value ``contrastkit evaluate`` reports as
    ``query_to_corpus_ndcg10``), as ``online_ndcg10``. It embeds in eval mode under
    ``no_grad`` and puts the encoder back in the mode it found, draws no random number and
    keeps no state, so a run's weights are bit for bit the same with and without it. A test
    split whose corpus is under 10 documents has no nDCG@10: a ``ValueError`` when built."""

    def __init__(self, test: TextPairs, device):
        if len(retrieval_task(test)[1]) < RANKING_AT:
            raise ValueError(f"online_probe=true scores nDCG@{RANKING_AT} of {test.name}, "
                             f"whose corpus has fewer than {RANKING_AT} documents")
        self.test, self.device = test, device

    def __call__(self, encoder) -> dict[str, float]:
        training = encoder.training
        try:
            results = held_out_retrieval(encoder, self.test, self.device)
        finally:
            encoder.train(training)
        ndcg = results[f"{DIRECTION}_ndcg{RANKING_AT}"]
        assert isinstance(ndcg, float), "text_retrieval gives floats"
        return {ONLINE_RETRIEVAL: ndcg}

    def state_dict(self) -> dict:
        """Nothing: the measure keeps no state (what a checkpoint holds of it)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Nothing to restore (:meth:`state_dict`)."""


def training_pairs(encoder, train: TextPairs, device, pairs: int, seed: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The embeddings of the anchors and positives of ``pairs`` rows of ``train`` (all of them
    when it has fewer), chosen by a generator seeded with ``seed``."""
    chosen = torch.randperm(len(train), generator=derived_generator(seed, 0))[:pairs].sort()
    rows = chosen.values
    positives = train.positives_or_anchors()
    return (embed_sentences(encoder, [train.texts[i] for i in train.anchors[rows].tolist()],
                            device),
            embed_sentences(encoder, [train.texts[i] for i in positives[rows].tolist()],
                            device))
