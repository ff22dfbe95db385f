"""The order of the training samples: a seeded permutation per epoch, split across processes.

Epoch ``e`` of a run with seed ``s`` always visits the samples in the same order, so a resumed
run needs only the epoch number to continue the sequence. Under data parallelism each global
batch is cut into ``world_size`` consecutive slices, one per process, so the processes
together see exactly the batches one process would see.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, cast

import torch
from torch.utils.data import DataLoader
from torch.utils.data._utils.collate import default_collate

from contrastkit.data.seeding import derived_generator
from contrastkit.typing import Samples


def epoch_permutation(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The sample order of ``epoch``: a permutation of ``range(n)`` seeded by (seed, epoch)."""
    return torch.randperm(n, generator=derived_generator(seed, epoch))


def local_batches(n: int, batch_size: int, seed: int, epoch: int, rank: int = 0,
                  world_size: int = 1) -> list[list[int]]:
    """This process's index lists for ``epoch``: full global batches only (the remainder is
    dropped, as BatchNorm and the losses need whole batches), each cut into ``world_size``
    slices of which ``rank``'s is returned."""
    if batch_size % world_size:
        raise ValueError(f"batch_size must be divisible by the number of processes "
                         f"({world_size}), got {batch_size}")
    if batch_size > n:
        raise ValueError(f"batch_size must be <= the dataset size {n}, got {batch_size}")
    order = epoch_permutation(n, seed, epoch)
    local = batch_size // world_size
    return [order[start + rank * local: start + (rank + 1) * local].tolist()
            for start in range(0, n - batch_size + 1, batch_size)]


def epoch_batches(dataset: Samples, batch_size: int, seed: int, epoch: int, rank: int = 0,
                  world_size: int = 1) -> list[list[int]]:
    """This process's index lists for ``epoch``: :func:`local_batches`, or, for a dataset
    whose rows carry keys (a ``row_keys()`` method: ``(N, c)`` integers, e.g. the texts of a
    text pair), :func:`distinct_batches` of the epoch's order, each global batch cut into
    ``world_size`` slices as :func:`local_batches` cuts them."""
    keys = getattr(dataset, "row_keys", None)
    if keys is None:
        return local_batches(len(dataset), batch_size, seed, epoch, rank, world_size)
    local_batches(len(dataset), batch_size, seed, 0, rank, world_size)  # the same checks
    local = batch_size // world_size
    return [batch[rank * local:(rank + 1) * local] for batch in distinct_batches(
        keys(), batch_size, epoch_permutation(len(dataset), seed, epoch))]


def distinct_batches(keys: torch.Tensor, batch_size: int, order: torch.Tensor
                     ) -> list[list[int]]:
    """Batches of ``batch_size`` rows in which no key repeats: row ``i`` has the keys
    ``keys[i]`` (an integer tensor ``(N, c)``), and two rows that share one never meet.

    The rows are taken in ``order``; a row that shares a key with the batch being filled waits
    and joins the first later batch it fits, before any row after it in ``order`` (as
    sentence-transformers' ``NoDuplicatesBatchSampler`` does). The rows that fit no full batch
    by the end are left out of the epoch, with the incomplete last batch.
    """
    rows = [set(row) for row in keys.tolist()]
    waiting: list[int] = []
    batches = []
    upcoming = iter(order.tolist())
    exhausted = False
    while not exhausted or waiting:
        batch: list[int] = []
        seen: set[int] = set()
        still_waiting: list[int] = []
        for row in waiting:
            if len(batch) < batch_size and not rows[row] & seen:
                batch.append(row)
                seen |= rows[row]
            else:
                still_waiting.append(row)
        waiting = still_waiting
        while len(batch) < batch_size:
            following = next(upcoming, None)
            if following is None:
                exhausted = True
                break
            if rows[following] & seen:
                waiting.append(following)
            else:
                batch.append(following)
                seen |= rows[following]
        if len(batch) < batch_size:
            break
        batches.append(batch)
    return batches


def batch_loader(dataset: Samples, batches: list[list[int]], num_workers: int = 0,
                 pin_memory: bool = False, generator: torch.Generator | None = None
                 ) -> DataLoader:
    """A DataLoader yielding ``(images, labels)`` for each index list of ``batches``.

    Datasets with ``__getitems__`` (in-memory tensors) return whole batches in one indexing
    operation; others are loaded item by item (in ``num_workers`` processes) and stacked.
    Each iteration draws its workers' base seed from ``generator`` (a fresh one by default),
    never from torch's global generator, which a model's dropout draws from: a run resumed
    mid-epoch starts a new loader, whose draw would otherwise shift every later dropout mask.
    """
    batched = hasattr(dataset, "__getitems__")
    # any map-style dataset (a list too), which torch's annotation narrows to a Dataset
    return DataLoader(dataset,  # type: ignore[arg-type]
                      batch_sampler=batches, num_workers=num_workers,
                      pin_memory=pin_memory, generator=generator or torch.Generator(),
                      collate_fn=_whole_batch if batched else default_collate)


def _whole_batch(batch):
    """A batch from ``__getitems__``: as the dataset returned it (a tuple of batched tensors),
    or stacked when it is a list of items (torch's ``Subset`` has ``__getitems__`` whatever it
    wraps, and returns the items one by one when the dataset it wraps has none)."""
    return default_collate(batch) if isinstance(batch, list) else batch


def epoch_loader(dataset: Samples, batches: list[list[int]], num_workers: int,
                 device: torch.device, seed: int, epoch: int) -> Iterator:
    """The training loader of ``epoch``'s ``batches`` (those still to run) on ``device``:
    :func:`batch_loader` with its generator seeded by ``(seed, epoch)``, pinned and
    :func:`fetched_ahead` on a GPU that the main process feeds."""
    on_gpu = device.type == "cuda"
    return fetched_ahead(batch_loader(dataset, batches, num_workers, on_gpu,
                                      derived_generator(seed, epoch)),
                         ahead=on_gpu and num_workers == 0)


Item = TypeVar("Item")
_END = object()


def fetched_ahead(batches: Iterable[Item], ahead: bool) -> Iterator[Item]:
    """``batches``' items in order; with ``ahead``, each next one is fetched in a background
    thread while the caller works on the current one.

    For a GPU fed by the main process (``num_workers=0``): there loading a batch (indexing,
    collating, pinning) would otherwise run between two steps while the GPU waits, wherever
    a step ends by reading its values (a host synchronization). The thread releases nothing
    but the time: the batches, their order and the data are the same, and an error raised
    while fetching one is raised here when that batch is due."""
    if not ahead:
        yield from batches
        return
    iterator = iter(batches)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="contrastkit-batches") as pool:
        coming = pool.submit(next, iterator, _END)
        while (item := coming.result()) is not _END:
            coming = pool.submit(next, iterator, _END)
            yield cast(Item, item)  # not the sentinel _END
