"""What a run trains on: its dataset, encoder and augmentation, the built-in ones named by the
config or the user's own objects given to :func:`~.loop.pretrain`.

The user's objects:

- a **dataset**: any map-style ``torch.utils.data.Dataset`` (``__len__`` and ``__getitem__``)
  whose items are ``(x, label)`` or ``x``; ``x`` a tensor (or array) of any shape, the same for
  every item; ``label`` an integer class id. ``uint8`` samples are images scaled to ``[0, 1]``
  (divided by 255, as the built-in datasets); floating-point samples are used as they are.
- an **encoder**: any ``nn.Module`` mapping a batch ``(B, ...)`` to embeddings ``(B, d)``; the
  loss sees its output. A ``features(batch)`` method, as :class:`~contrastkit.models.Encoder`
  has, gives the backbone features that ``contrastkit embed`` and the probes read; without one,
  its output is all there is.
- an **augmentation**: a callable ``augment(batch, generator) -> view`` of the batch's shape,
  drawing its randomness from ``generator`` (the run's ``torch.Generator`` on the CPU,
  checkpointed, so that a resumed run is exact). Under torch.distributed each process augments
  its own share of the batch, with a generator of its own drawn from the run's.

Defaults: the built-in encoder (``backbone`` + projector) needs image samples ``(C, H, W)``
(normalized with the dataset's ``info`` mean and std when it has a
:class:`~contrastkit.data.DatasetInfo`, else 0.5 and 0.5); the built-in augmentation
(:class:`~contrastkit.data.SimCLRAugment` with its default, CIFAR, recipe at the image size)
needs square ``uint8`` images with 1 or 3 channels: for anything else pass ``augment=``.

The config records each user object by its type's name (``user_encoder``, ``user_dataset``,
``user_augment``), so that a run cannot be resumed, evaluated or embedded without them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, IterableDataset

from contrastkit.data import (
    SimCLRAugment,
    TextPairs,
    augmentation_for,
    load_dataset,
    pretrain_split,
)
from contrastkit.models import build_encoder
from contrastkit.typing import Samples

from .config import PretrainConfig

#: The config field that records each user object.
USER_FIELDS = {"encoder": "user_encoder", "dataset": "user_dataset", "augment": "user_augment"}
#: The settings that a user object replaces: changing them as well is an error.
REPLACED_SETTINGS = {"encoder": ("backbone", "projector_hidden", "projector_out"),
                     "dataset": ("dataset", "download")}
UNLABELED = -1
PROBE_SIZE = 2  # samples pushed through the augmentation and encoder to check them


@dataclass
class RunInputs:
    """A run's dataset (of ``(x, label)``, ``label`` -1 when it has none), encoder and
    augmentation, and its config with the user objects recorded."""

    config: PretrainConfig
    dataset: Samples
    encoder: nn.Module
    augment: object


def build_inputs(config: PretrainConfig, device: torch.device, encoder: nn.Module | None = None,
                 dataset: Samples | None = None, augment: Any = None) -> RunInputs:
    """The run's inputs on ``device``, each the user's object when given, else the built-in
    one of the config; every check (the objects' kinds, shapes and outputs on two samples, the
    dataset's size against the batch) is made here, before the run folder is touched."""
    if encoder is not None and not isinstance(encoder, nn.Module):
        raise ValueError(f"encoder must be a torch.nn.Module, got {type(encoder).__name__}")
    if augment is not None and not callable(augment):
        raise ValueError(f"augment must be a callable augment(batch, generator) -> view, got "
                         f"{type(augment).__name__}")
    config = record_user_objects(config, encoder=encoder, dataset=dataset, augment=augment)
    if config.task == "image_text":
        return _image_text_inputs(config, device)
    if config.task == "text_pairs":
        return _text_pair_inputs(config, device)
    if dataset is None:
        dataset = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir,
                               config.download)
        _check_not_text(dataset, config)
    else:
        dataset = LabeledDataset(dataset)
        _check_labels(config, dataset)
    if len(dataset) < config.batch_size:
        raise ValueError(f"dataset has {len(dataset)} samples, fewer than batch_size="
                         f"{config.batch_size}; use a smaller batch_size")
    sample = dataset[0][0]
    if encoder is None:
        encoder = built_in_encoder(config, dataset, sample)
    if augment is None:
        augment = _built_in_augment(config, dataset, sample)
    encoder = encoder.to(device)
    _probe(config, dataset, encoder, augment, device)
    return RunInputs(config, dataset, encoder, augment)


def _image_text_inputs(config: PretrainConfig, device: torch.device) -> RunInputs:
    """The inputs of ``task=image_text``: the config's captioned dataset with its captions
    tokenized, the two towers, and the dataset's augmentation (one view of each image)."""
    from .image_text import TokenizedCaptions, build_towers

    images = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir,
                          config.download)
    _check_not_text(images, config)
    if len(images) < config.batch_size:
        raise ValueError(f"dataset has {len(images)} samples, fewer than batch_size="
                         f"{config.batch_size}; use a smaller batch_size")
    towers = build_towers(config, images.info)
    dataset = TokenizedCaptions(images, towers.tokenizer)
    augment = augmentation_for(config.dataset, images.info.image_size)
    towers = towers.to(device)
    _probe_towers(config, dataset, towers, augment, device)
    return RunInputs(config, dataset, towers, augment)


def _check_not_text(dataset, config: PretrainConfig) -> None:
    """A ``ValueError`` when the config's ``dataset`` of images holds text pairs instead."""
    if isinstance(dataset, TextPairs):
        raise ValueError(f"dataset={config.dataset} holds text pairs, not images: train on it "
                         f"with task=text_pairs (see docs/text.md)")


def _text_pair_inputs(config: PretrainConfig, device: torch.device) -> RunInputs:
    """The inputs of ``task=text_pairs``: the config's text-pair dataset tokenized, the
    sentence encoder, and no augmentation (SimCSE's is the encoder's dropout)."""
    from .text_pairs import check_text_pairs, text_pair_inputs

    pairs = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir,
                         config.download)
    encoder, dataset = text_pair_inputs(config, pairs)
    check_text_pairs(config, dataset)
    return RunInputs(config, dataset, encoder.to(device), None)


def record_user_objects(config: PretrainConfig, **objects) -> PretrainConfig:
    """``config`` with ``user_encoder``, ``user_dataset``, ``user_augment`` naming the given
    objects' types (empty for the built-in ones). A config that names a user object not given
    (a resumed run's saved config), or changes a setting a given object replaces, is an error.
    """
    recorded: dict[str, Any] = {}  # the config fields of the user objects
    for name, field in USER_FIELDS.items():
        value = objects[name]
        if value is None and getattr(config, field):
            raise ValueError(
                f"{field}={getattr(config, field)}: the run uses your own {name}, which only "
                f"Python can supply: pass the same object as pretrain(..., {name}=...); the "
                f"command line cannot rebuild it")
        recorded[field] = "" if value is None else type_name(value)
    given = [name for name, value in objects.items() if value is not None]
    if config.task != "views" and given:
        model, data, page = (("towers", "captioned", "image-text")
                             if config.task == "image_text"
                             else ("sentence encoder", "text-pair", "text"))
        raise ValueError(f"task={config.task} trains the built-in or open_clip {model} on a "
                         f"registered {data} dataset; your own {' and '.join(given)} "
                         f"belong(s) to task=views (see docs/{page}.md)")
    defaults = PretrainConfig()
    replaced = [f"{key}={getattr(config, key)}" for name, keys in REPLACED_SETTINGS.items()
                if objects[name] is not None for key in keys
                if getattr(config, key) != getattr(defaults, key)]
    if replaced:
        raise ValueError(f"{', '.join(replaced)} would be ignored: your own encoder replaces "
                         f"backbone and projector_*, your own dataset replaces dataset and "
                         f"download; remove the setting")
    return dataclasses.replace(config, **recorded)


def check_resumable(saved: Path, **objects) -> None:
    """A clear error when the run whose config.yaml is ``saved`` used a user object (encoder,
    dataset or augment) that ``objects`` lacks: one not passed to :func:`~.loop.pretrain`
    again. Nothing is checked when there is no ``saved`` file."""
    from contrastkit.yaml_files import read_yaml

    if not saved.is_file():
        return
    before = read_yaml(saved, f"config file {saved}") or {}
    if not isinstance(before, dict):
        raise ValueError(f"cannot resume {saved.parent}: its config file {saved} must hold a "
                         f"mapping of key: value; restore it, or start the run again with "
                         f"overwrite=True")
    for name, field in USER_FIELDS.items():
        if before.get(field) and objects[name] is None:
            raise ValueError(
                f"cannot resume {saved.parent}: it was trained with your own {name} "
                f"({before[field]}); pass the same object as pretrain(..., {name}=...) to "
                f"resume it (the command line cannot rebuild it)")


def check_rebuildable(config: PretrainConfig, run: Path, command: str,
                      needs: tuple[str, ...] = ("encoder", "dataset", "augment")) -> None:
    """A ``ValueError`` when the run at ``run`` used a user object among ``needs``, which
    ``command`` (e.g. ``"contrastkit evaluate"``) cannot rebuild from the config."""
    used = [f"{name} ({getattr(config, USER_FIELDS[name])})" for name in needs
            if getattr(config, USER_FIELDS[name])]
    if used:
        raise ValueError(f"{run} was trained with your own {' and '.join(used)}, which "
                         f"{command} cannot rebuild; use the Python API with the same objects "
                         f"(see docs/own-model-and-data.md)")


def type_name(value: object) -> str:
    """The qualified name of ``value``'s type (of ``value`` itself for a function or class),
    what the config records of a user object."""
    kind = value if hasattr(value, "__qualname__") else type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


class LabeledDataset(Dataset):
    """A user's map-style dataset of ``(x, label)``, ``(x,)`` or ``x``, as items ``(x as a
    tensor, label)`` with ``label`` -1 (:data:`UNLABELED`) when it has none."""

    def __init__(self, dataset: Samples) -> None:
        if isinstance(dataset, IterableDataset) or not (
                hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise ValueError(f"dataset must be a map-style torch Dataset (with __len__ and "
                             f"__getitem__), got {type(dataset).__name__}")
        self.dataset = dataset
        if len(dataset) == 0:
            raise ValueError("dataset is empty")
        first = dataset[0]
        self.labeled = isinstance(first, (tuple, list)) and len(first) == 2
        if isinstance(first, (tuple, list)) and len(first) not in (1, 2):
            raise ValueError(f"dataset items must be x or (x, label), got a "
                             f"{type(first).__name__} of {len(first)} items")
        _check_sample(self[0][0])

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        item = self.dataset[index]
        if self.labeled:
            return torch.as_tensor(item[0]), int(item[1])
        return torch.as_tensor(item[0] if isinstance(item, (tuple, list)) else item), UNLABELED


def _check_sample(sample: torch.Tensor) -> None:
    if sample.dtype != torch.uint8 and not sample.is_floating_point():
        raise ValueError(f"dataset samples must be uint8 images or floating-point tensors, "
                         f"got {sample.dtype}")


def _check_labels(config: PretrainConfig, dataset: LabeledDataset) -> None:
    from contrastkit import losses

    if not dataset.labeled and losses.get(config.loss).uses_labels:
        raise ValueError(f"loss={config.loss} uses class labels, but the dataset's items are "
                         f"x alone; give items (x, label) or choose a loss without labels")


def built_in_encoder(config: PretrainConfig, dataset, sample: torch.Tensor) -> nn.Module:
    """The config's backbone + projector for ``dataset``, whose first sample is ``sample``
    (an image ``(C, H, W)``); normalized with the dataset's ``info`` when it has one."""
    if config.task == "image_text":
        from .image_text import build_towers

        return build_towers(config, dataset.info)
    if sample.ndim != 3:
        raise ValueError(f"the built-in backbone ({config.backbone}) takes images (C, H, W), "
                         f"but the dataset's samples have shape {tuple(sample.shape)}; pass "
                         f"your own encoder=")
    channels = sample.shape[0]
    info = getattr(dataset, "info", None) or getattr(
        getattr(dataset, "dataset", None), "info", None)
    mean, std = (info.mean, info.std) if info is not None else ((0.5,) * channels,) * 2
    return build_encoder(config.backbone, channels, mean, std, config.projector_hidden,
                         config.projector_out)


def _built_in_augment(config: PretrainConfig, dataset, sample: torch.Tensor):
    if not isinstance(dataset, LabeledDataset):
        return augmentation_for(config.dataset, dataset.info.image_size)
    square_image = (sample.ndim == 3 and sample.shape[0] in (1, 3)
                    and sample.shape[1] == sample.shape[2])
    if sample.dtype != torch.uint8 or not square_image:
        raise ValueError(f"the built-in augmentation takes square uint8 images (C, H, W) with "
                         f"1 or 3 channels, but the dataset's samples are {sample.dtype} of "
                         f"shape {tuple(sample.shape)}; pass augment=callable(batch, "
                         f"generator) -> view")
    return SimCLRAugment(size=sample.shape[1])


def unit_scaled(batch: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A batch in ``dtype``: ``uint8`` images divided by 255, floating-point ones as they are."""
    return batch.to(dtype) if batch.is_floating_point() else batch.to(dtype).div_(255)


def two_views(augment, batch: torch.Tensor, generator: torch.Generator, global_batch: int,
              local: slice) -> list[torch.Tensor]:
    """Two augmented views of this process's ``batch`` (rows ``local`` of the global batch).
    A :class:`~contrastkit.data.SimCLRAugment` draws the global batch's parameters and applies
    this process's rows, so any number of processes sees the views of one; any other
    augmentation is called as ``augment(batch, generator)``, under torch.distributed with a
    generator of this process's own (:func:`process_generator`)."""
    if isinstance(augment, SimCLRAugment):
        return [augment.apply(batch, augment.sample(global_batch, generator)[local])
                for _ in range(2)]
    if batch.shape[0] < global_batch:
        generator = process_generator(generator, local.start)
    return [augment(batch, generator) for _ in range(2)]


def process_generator(shared: torch.Generator, first_row: int) -> torch.Generator:
    """A generator for one process's share of the batch, whose share starts at ``first_row``.

    Every process holds the same ``shared`` generator (seeded alike, checkpointed), so an
    augmentation drawing from it directly would give each process's rows the same random
    draws. One seed is drawn from ``shared`` (which so advances alike everywhere, and a resumed
    run draws the same) and offset by ``first_row``: a different stream per process.
    """
    seed = int(torch.randint(2**62, (), generator=shared))
    return torch.Generator().manual_seed(seed + first_row)


@torch.no_grad()
def _probe(config: PretrainConfig, dataset, encoder: nn.Module, augment,
           device: torch.device) -> None:
    """Push :data:`PROBE_SIZE` samples through the augmentation and the encoder (in eval mode,
    with a generator of its own: the run's randomness is untouched) and check their shapes."""
    batch = torch.stack([dataset[i][0] for i in range(PROBE_SIZE)]).to(device)
    batch = unit_scaled(batch, torch.get_default_dtype())
    generator = torch.Generator().manual_seed(config.seed)
    view = _call("augment", lambda: two_views(augment, batch, generator, PROBE_SIZE,
                                              slice(0, PROBE_SIZE))[0], batch)
    if not isinstance(view, torch.Tensor) or view.shape != batch.shape:
        got = tuple(view.shape) if isinstance(view, torch.Tensor) else type(view).__name__
        raise ValueError(f"augment must return a view of the batch's shape "
                         f"{tuple(batch.shape)}, got {got}")
    was_training = encoder.training
    encoder.eval()
    try:
        out = _call("encoder", lambda: encoder(view), batch)
    finally:
        encoder.train(was_training)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != PROBE_SIZE:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"encoder must map a batch {tuple(batch.shape)} to embeddings "
                         f"({PROBE_SIZE}, d), got {got}")


@torch.no_grad()
def _probe_towers(config: PretrainConfig, dataset, towers: nn.Module, augment,
                  device: torch.device) -> None:
    """Push :data:`PROBE_SIZE` image-caption pairs through the augmentation and both towers
    (in eval mode, with a generator of their own) and check that the embeddings match."""
    images, _, tokens, _ = dataset.__getitems__(list(range(PROBE_SIZE)))
    images = unit_scaled(images.to(device), torch.get_default_dtype())
    generator = torch.Generator().manual_seed(config.seed)
    view = augment.apply(images, augment.sample(PROBE_SIZE, generator))
    was_training = towers.training
    towers.eval()
    try:
        u = _call("image tower", lambda: towers(view, tower="image"), images)
        v = _call("text tower", lambda: towers(tokens[:, 0].to(device), tower="text"),
                  tokens[:, 0])
    finally:
        towers.train(was_training)
    if u.ndim != 2 or u.shape != v.shape or u.shape[0] != PROBE_SIZE:
        raise ValueError(f"the towers must embed images and captions alike, as "
                         f"({PROBE_SIZE}, d); got {tuple(u.shape)} and {tuple(v.shape)}")


def _call(name: str, run, batch: torch.Tensor):
    """``run()``, with an exception of the user's ``name`` object turned into a ValueError."""
    try:
        return run()
    except Exception as error:  # the user's code: report which object failed, on what
        raise ValueError(f"{name} failed on a batch of shape {tuple(batch.shape)} "
                         f"({type(error).__name__}: {error})") from error
