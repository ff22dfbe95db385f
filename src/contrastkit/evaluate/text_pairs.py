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

import numpy as np
import torch

from contrastkit.data.seeding import derived_generator
from contrastkit.data.text_pairs import TextPairs
from contrastkit.geometry import similarity_stats
from contrastkit.train.text_pairs import trimmed

from .pair_stats import distance_measurements
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
                           delta_minus: float = 0.5) -> dict:
    """What ``contrastkit evaluate`` reports of a text-pair run:

    - retrieval of the test split (module docstring) by cosine similarity, ties against the
      model: ``query_to_corpus_r1``, ``_r5``, ``_r10`` (%, the queries with a relevant document
      among the first k, as the image-text recalls), ``query_to_corpus_mrr10``,
      ``query_to_corpus_ndcg10`` and ``query_to_corpus_map_r`` (in ``[0, 1]``), with
      ``retrieval_queries`` and ``retrieval_corpus``, the sizes (a k above the corpus is left
      out);
    - the central paper's Table 1 statistics (``neg_sim_var``, ``neg_sim_mean``,
      ``pos_sim_mean``) and LMCL's margin measures of ``pairs`` training rows (anchor and
      positive; plain sentences: the sentence twice, which without dropout is the same
      embedding), drawn with ``seed``; the negatives are the other rows' positives.
    """
    queries, corpus, relevant = retrieval_task(test)
    query_embeddings = embed_sentences(encoder, queries, device)
    corpus_embeddings = embed_sentences(encoder, corpus, device)
    ks = tuple(k for k in RECALL_AT if k <= len(corpus))  # RANKING_AT among them
    metrics = retrieval_metrics(query_embeddings, corpus_embeddings, relevant, ks=ks)
    results: dict[str, object] = {f"{DIRECTION}_r{k}": 100.0 * metrics[f"hit@{k}"] for k in ks}
    if f"mrr@{RANKING_AT}" in metrics:
        results[f"{DIRECTION}_mrr{RANKING_AT}"] = metrics[f"mrr@{RANKING_AT}"]
        results[f"{DIRECTION}_ndcg{RANKING_AT}"] = metrics[f"ndcg@{RANKING_AT}"]
    results.update({f"{DIRECTION}_map_r": metrics["map@r"], "retrieval_queries": len(queries),
                    "retrieval_corpus": len(corpus)})
    u, v = training_pairs(encoder, train, device, pairs, seed)
    stats = similarity_stats(u, v)
    results.update({"neg_sim_var": stats.negative_var, "neg_sim_mean": stats.negative_mean,
                    "pos_sim_mean": stats.positive_mean, "pairs": stats.positive_count,
                    **distance_measurements(u, v, delta_plus, delta_minus)})
    return results


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
