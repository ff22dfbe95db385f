"""The evaluation of an image-text run (``task=image_text``), as CLIP users expect it: zero-shot
classification and retrieval recall on the test split, and the central paper's similarity
statistics of the cross-modal pairs."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import Subset

from contrastkit.data.seeding import derived_generator
from contrastkit.geometry import similarity_stats
from contrastkit.train.inputs import unit_scaled

from .pair_stats import distance_measurements
from .prefixes import PREFIXES, per_prefix
from .ranking import retrieval_metrics
from .relevance import Relevance
from .retrieval import retrieval_recalls
from .zero_shot import class_embeddings, zero_shot_accuracy

BATCH = 256
RECALL_AT = (1, 5, 10)
RANKING_AT = 10


@torch.no_grad()
def embed_images(towers, dataset, device) -> torch.Tensor:
    """The image tower's embeddings ``(N, d)`` of every image of ``dataset``, unaugmented."""
    towers.eval()
    rows = []
    for start in range(0, len(dataset), BATCH):
        images, _ = dataset.__getitems__(list(range(start, min(start + BATCH, len(dataset)))))
        images = unit_scaled(images.to(device), torch.get_default_dtype())
        rows.append(towers.encode_image(images).float().cpu())
    return torch.cat(rows)


@torch.no_grad()
def embed_texts(towers, texts: list[str], device) -> torch.Tensor:
    """The text tower's embeddings ``(len(texts), d)``."""
    towers.eval()
    rows = [towers.encode_text(towers.tokenizer(texts[start:start + BATCH]).to(device))
            .float().cpu() for start in range(0, len(texts), BATCH)]
    return torch.cat(rows)


def image_text_measurements(towers, train, test, device, pairs: int = 5000, seed: int = 0,
                            delta_plus: float = 0.1, delta_minus: float = 0.5,
                            dims: Sequence[int] = ()) -> dict:
    """What ``contrastkit evaluate`` reports of an image-text run besides the probes:

    - ``zero_shot_top1`` (%): CLIP's zero-shot classifier of the test split's images, from
      the dataset's class names and prompt templates (absent when it has none);
    - retrieval recall@1, 5, 10 (%) on the test split, image to text (an image is found when
      any of its captions is among the k nearest) and text to image
      (``image_to_text_r1`` ... ``text_to_image_r10``, :func:`retrieval_recalls`; a tie counts
      against the model; a k above the test split's images is left out);
    - MRR@10 and nDCG@10 (in ``[0, 1]``) of both directions (``image_to_text_mrr10``,
      ``image_to_text_ndcg10``, ``text_to_image_mrr10``, ``text_to_image_ndcg10``,
      :func:`ranking_measurements`; left out below 10 test images);
    - with ``dims`` (a run's ``matryoshka_dims``), those retrieval results of each prefix of the
      embeddings (:mod:`~contrastkit.evaluate.prefixes`, under ``"matryoshka"``; zero-shot
      classification stays at the full embedding);
    - the similarity statistics of the central paper's Table 1 (``neg_sim_var``,
      ``neg_sim_mean``, ``pos_sim_mean``) and LMCL's margin measures, of ``pairs``
      cross-modal pairs of the training split: an image (unaugmented) and one of its captions,
      drawn with ``seed``; the negatives are the pairs' other captions.
    """
    results: dict[str, object] = {}
    images = embed_images(towers, test, device)
    texts = [text for captions in test.captions for text in captions]
    owner = torch.repeat_interleave(torch.arange(len(test)),
                                    torch.tensor([len(captions) for captions in test.captions]))
    if has_zero_shot(test):
        classes = class_embeddings(lambda tokens: towers.encode_text(tokens.to(device)),
                                   towers.tokenizer, test.class_names, test.prompts)
        results["zero_shot_top1"] = zero_shot_accuracy(images, classes.float().cpu(),
                                                       test.labels)
    text_embeddings = embed_texts(towers, texts, device)

    def retrieval(image_rows: torch.Tensor, text_rows: torch.Tensor) -> dict[str, float]:
        return {**retrieval_recalls(image_rows, text_rows, owner,
                                    ks=[k for k in RECALL_AT if k <= len(test)]),
                **ranking_measurements(image_rows, text_rows, owner)}

    results.update(retrieval(images, text_embeddings))
    if dims:
        results[PREFIXES] = per_prefix(dims, retrieval, images, text_embeddings)
    u, v = cross_modal_pairs(towers, train, device, pairs, seed)
    stats = similarity_stats(u, v)
    results.update({"neg_sim_var": stats.negative_var, "neg_sim_mean": stats.negative_mean,
                    "pos_sim_mean": stats.positive_mean, "pairs": stats.positive_count,
                    **distance_measurements(u, v, delta_plus, delta_minus)})
    return results


def ranking_measurements(images: torch.Tensor, texts: torch.Tensor,
                         text_image: torch.Tensor) -> dict[str, float]:
    """MRR@10 and nDCG@10 (:func:`~contrastkit.evaluate.ranking.retrieval_metrics`, ties
    against the model) of image-to-text retrieval, where every caption of an image is relevant
    to it, and of text-to-image retrieval, where a caption's image is: ``{direction}_mrr10``
    and ``{direction}_ndcg10``; nothing when there are fewer than 10 images. Text ``j``
    belongs to image ``text_image[j]``."""
    if images.shape[0] < RANKING_AT:
        return {}
    order = torch.argsort(text_image, stable=True)
    counts = torch.bincount(text_image, minlength=images.shape[0])
    captions = Relevance(torch.cat([counts.new_zeros(1), counts.cumsum(0)]), order)
    results = {}
    for direction, queries, corpus, relevant in (("image_to_text", images, texts, captions),
                                                 ("text_to_image", texts, images, text_image)):
        metrics = retrieval_metrics(queries, corpus, relevant, ks=(RANKING_AT,))
        results[f"{direction}_mrr{RANKING_AT}"] = metrics[f"mrr@{RANKING_AT}"]
        results[f"{direction}_ndcg{RANKING_AT}"] = metrics[f"ndcg@{RANKING_AT}"]
    return results


def has_zero_shot(dataset) -> bool:
    """Whether ``dataset`` has what zero-shot classification needs: class names and prompt
    templates (a caption file has neither)."""
    return bool(dataset.class_names and dataset.prompts)


def cross_modal_pairs(towers, dataset, device, pairs: int, seed: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The image and caption embeddings of ``pairs`` images of ``dataset`` (all of them when it
    has fewer), chosen with one caption each by a generator seeded with ``seed``."""
    generator = derived_generator(seed, 0)
    chosen = torch.randperm(len(dataset), generator=generator)[:pairs].sort().values.tolist()
    subset_images = embed_images(towers, Subset(dataset, chosen), device)
    draws = torch.rand(len(chosen), generator=generator, dtype=torch.float64)
    texts = [dataset.captions[index][int(draw * len(dataset.captions[index]))]
             for index, draw in zip(chosen, draws.tolist(), strict=True)]
    return subset_images, embed_texts(towers, texts, device)
