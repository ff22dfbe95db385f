"""Image-text retrieval on cosine similarity (the recall@k of CLIP, Radford et al., ICML 2021,
arXiv:2103.00020, Table 13; the COCO / Flickr30k protocol of Karpathy & Fei-Fei, CVPR 2015,
where an image has several captions and each caption one image).

**Ties count against the model.** A query's rank is ``1 + `` the number of wrong candidates
(negatives) scored *at least as high* as its best right candidate: the position of its first
right candidate when equal scores are ordered worst case, negatives first. It does not depend on
the order of the candidates, and a collapsed encoder (every score equal) hits nothing below
``k = `` the number of candidates, where "1 + the number scored strictly higher" would give it
100 %. Ties among the right candidates themselves cost nothing (an image whose five captions
share the top score has rank 1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import torch

from contrastkit.dtypes import cast, promoted
from contrastkit.rows import unit_rows

#: Each text's image (an index into the images): an integer tensor or sequence, one per text.
TextImage = torch.Tensor | Sequence[int]


@torch.no_grad()
def retrieval_ranks(image_embeddings: torch.Tensor, text_embeddings: torch.Tensor,
                    text_image: TextImage, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """The 1-based ranks ``(image_ranks (N,), text_ranks (M,))`` of image-to-text and
    text-to-image retrieval, ties counted against the model (module docstring).

    Text ``j`` (a row of ``text_embeddings`` ``(M, d)``) belongs to image ``text_image[j]`` (a
    row of ``image_embeddings`` ``(N, d)``); every image has at least one text. Image ``i``'s
    rank is ``1 +`` the number of other images' texts at least as cosine-similar to it as its
    most similar own text; text ``j``'s rank is ``1 +`` the number of other images at least as
    similar to it as its own. Both in int64 on the embeddings' device. Rows are L2-normalized
    here (a zero row scores 0 against everything); the similarities are computed in the
    embeddings' dtype, float32 at least, ``chunk`` queries at a time (memory
    ``O(chunk * max(N, M))``).
    """
    images, texts, owner = _checked(image_embeddings, text_embeddings, text_image, chunk)
    return _ranks(images, texts, owner, chunk)


@torch.no_grad()
def retrieval_recalls(image_embeddings: torch.Tensor, text_embeddings: torch.Tensor,
                      text_image: TextImage, ks: Sequence[int] = (1, 5, 10),
                      chunk: int = 1024) -> dict[str, float]:
    """Recall@k in percent of image-text retrieval on cosine similarity:
    ``image_to_text_r{k}``, the share of images with at least one of their texts among the
    ``k`` texts most similar to them, and ``text_to_image_r{k}``, the share of texts whose image
    is among the ``k`` images most similar to them, for each ``k`` in ``ks`` (the ranks of
    :func:`retrieval_ranks`: ties count against the model).

    ``text_image`` ``(M,)`` gives each text's image; an image may have several texts (five
    captions each on COCO) and must have one. Every ``k`` must lie in ``[1, N]`` (``N``, the
    number of images, is at most the number of texts ``M``): recall at ``k >= N`` would be
    100 % in both directions whatever the embeddings.
    """
    images, texts, owner = _checked(image_embeddings, text_embeddings, text_image, chunk)
    ks = check_ks(ks, images.shape[0], "the number of images")
    image_ranks, text_ranks = _ranks(images, texts, owner, chunk)
    result = {}
    for k in ks:
        result[f"image_to_text_r{k}"] = _percent(image_ranks, k)
    for k in ks:
        result[f"text_to_image_r{k}"] = _percent(text_ranks, k)
    return result


def chance_recalls(text_image: TextImage, num_images: int,
                   ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """The expected :func:`retrieval_recalls` of scores in uniformly random order, the keys of
    :func:`retrieval_recalls`: ``text_to_image_r{k} = 100 k / N``, and ``image_to_text_r{k}``,
    the mean over images of ``100 (1 - C(M - n_i, k) / C(M, k))`` where image ``i`` has ``n_i``
    of the ``M`` texts (the chance that none of its texts is among ``k`` drawn without
    replacement, subtracted from 1)."""
    owner = check_text_image(text_image, None, num_images)
    ks = check_ks(ks, num_images, "num_images")
    n_texts = owner.shape[0]
    texts_per_image = Counter(torch.bincount(owner, minlength=num_images).tolist())
    result = {}
    for k in ks:  # in exact rationals, rounded once
        total_comb = math.comb(n_texts, k)
        hits = sum(Fraction(count * (total_comb - math.comb(n_texts - n, k)), total_comb)
                   for n, count in texts_per_image.items())
        result[f"image_to_text_r{k}"] = float(100 * hits / num_images)
    for k in ks:
        result[f"text_to_image_r{k}"] = 100.0 * k / num_images
    return result


def unit_operands(a: torch.Tensor, a_name: str, b: torch.Tensor,
                  b_name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`real_operands` with unit rows."""
    a, b = real_operands(a, a_name, b, b_name)
    return unit_rows(a), unit_rows(b)


def real_operands(a: torch.Tensor, a_name: str, b: torch.Tensor,
                  b_name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` ``(n, d)`` and ``b`` ``(m, d)``, both in their promoted dtype and float32 at
    least; a ``ValueError`` naming the argument when one is not a non-empty, finite matrix or
    their widths differ."""
    for name, x in ((a_name, a), (b_name, b)):
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name} must be a non-empty matrix (n, d), got {shape}")
        if x.is_complex() or x.dtype == torch.bool:
            raise ValueError(f"{name} must be real, got dtype {x.dtype}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{b_name} must have {a.shape[1]} columns as {a_name}, "
                         f"got {b.shape[1]}")
    dtype = promoted(promoted(a.dtype, b.dtype), torch.float32)
    a, b = cast(a, dtype), cast(b, dtype)
    for name, x in ((a_name, a), (b_name, b)):
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} must be finite")
    return a, b


def check_text_image(text_image: object, n_texts: int | None, n_images: int) -> torch.Tensor:
    """``text_image`` as an int64 tensor, checked: flat, ``n_texts`` entries (when given), each
    in ``[0, n_images)``, and every image named at least once."""
    _check_positive("num_images", n_images)
    owner = torch.as_tensor(text_image)
    if owner.ndim != 1 or owner.dtype == torch.bool or owner.is_floating_point() \
            or owner.is_complex():
        raise ValueError(f"text_image must be a flat sequence of integers, got dtype "
                         f"{owner.dtype} and shape {tuple(owner.shape)}")
    if n_texts is not None and owner.shape[0] != n_texts:
        raise ValueError(f"text_image must have {n_texts} entries (one per text), "
                         f"got {owner.shape[0]}")
    owner = owner.long()
    if owner.numel() and (owner.min() < 0 or owner.max() >= n_images):
        raise ValueError(f"text_image must hold image indices in [0, {n_images}), got "
                         f"values in [{int(owner.min())}, {int(owner.max())}]")
    covered = torch.bincount(owner.cpu(), minlength=n_images) > 0
    if not covered.all():
        missing = torch.nonzero(~covered).flatten()[:5].tolist()
        raise ValueError(f"text_image must give every image a text; images {missing} "
                         f"(first 5) have none")
    return owner


def check_ks(ks: Sequence[int], largest: int, what: str) -> tuple[int, ...]:
    """``ks`` as a tuple, each an integer in ``[1, largest]`` (``what`` names ``largest``)."""
    if isinstance(ks, int):
        ks = (ks,)
    ks = tuple(ks)
    if not ks:
        raise ValueError("ks must name at least one k")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= largest:
            raise ValueError(f"ks must be integers in [1, {largest}] ({what}), got {k!r}")
    return ks


def _checked(image_embeddings: torch.Tensor, text_embeddings: torch.Tensor,
             text_image: TextImage, chunk: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    images, texts = unit_operands(image_embeddings, "image_embeddings",
                                  text_embeddings, "text_embeddings")
    owner = check_text_image(text_image, texts.shape[0], images.shape[0]).to(images.device)
    _check_positive("chunk", chunk)
    return images, texts, owner


def _ranks(images: torch.Tensor, texts: torch.Tensor, owner: torch.Tensor,
           chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    image_ranks = []
    for start in range(0, images.shape[0], chunk):
        similarity = images[start:start + chunk] @ texts.T
        own = owner[None, :] == torch.arange(start, start + similarity.shape[0],
                                             device=images.device)[:, None]
        best_own = similarity.masked_fill(~own, -math.inf).amax(dim=1, keepdim=True)
        image_ranks.append(1 + ((similarity >= best_own) & ~own).sum(dim=1))
    text_ranks = []
    for start in range(0, texts.shape[0], chunk):
        similarity = texts[start:start + chunk] @ images.T
        own_score = similarity.gather(1, owner[start:start + chunk, None])
        # the own image is among those >= its score: it stands for the 1
        text_ranks.append((similarity >= own_score).sum(dim=1))
    return torch.cat(image_ranks), torch.cat(text_ranks)


def _check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _percent(ranks: torch.Tensor, k: int) -> float:
    return 100.0 * int((ranks <= k).sum()) / ranks.shape[0]
