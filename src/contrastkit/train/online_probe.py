"""The trainer's online evaluation (``online_probe=true``): :class:`RunProbe`, the run's
:class:`~contrastkit.evaluate.online.OnlineProbe` at each epoch's end.

The probe reads the built-in dataset's labeled training split (the kNN's bank, the linear
head's data; STL-10's 5 000 labeled images, not the unlabeled ones it pretrains on) and its
test split, the splits ``contrastkit evaluate`` reads, so it needs a dataset with class labels
and a test split: ``digits``, ``mnist5k``, ``cifar10``, ``cifar100``, ``stl10``,
``imagefolder``. A captions file has no classes and ``task=image_text`` two towers (refused by
the config); the user's own dataset has no test split that the trainer knows: each is refused
with one line before the run folder is touched. Under torch.distributed the main process
probes (the others train on); each epoch's metrics gain ``online_linear_top1``,
``online_knn_top1`` and ``online_probe_seconds`` (its time), and a checkpoint the probe's state.

A text-pair run (``task=text_pairs``) has no classes to probe: its online measure is the
retrieval of its dataset's test split, ``online_ndcg10``
(:class:`~contrastkit.evaluate.text_pairs.OnlineRetrieval`), which keeps no state.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from contrastkit.data import load_dataset, pretrain_split

from .config import PretrainConfig
from .progress import ONLINE_SECONDS
from .runtime import Runtime

#: The checkpoint's key for the probe's state.
STATE_KEY = "online_probe"


class RunProbe:
    """A run's online probe, or, when ``probe`` is ``None`` (``online_probe=false``, or a
    process other than the main one), nothing: every method then does nothing."""

    def __init__(self, probe=None) -> None:
        self.probe = probe

    def restore(self, state: dict | None) -> None:
        """Continue from the checkpoint ``state`` when it holds the probe's state (a run that
        turns the probe on at a resume starts it afresh)."""
        if self.probe is not None and state is not None and STATE_KEY in state:
            self.probe.load_state_dict(state[STATE_KEY])

    def epoch_done(self, encoder: torch.nn.Module) -> dict[str, float]:
        """The probe's accuracies of ``encoder`` at an epoch's end and its seconds (``{}``
        without a probe)."""
        if self.probe is None:
            return {}
        start = time.perf_counter()
        metrics = self.probe(encoder)
        return {**metrics, ONLINE_SECONDS: time.perf_counter() - start}

    def checkpoint_state(self) -> dict:
        """What a checkpoint holds of it: ``{"online_probe": state}``, or ``{}``."""
        return {} if self.probe is None else {STATE_KEY: self.probe.state_dict()}


def run_probe(config: PretrainConfig, dataset: Any, runtime: Runtime) -> RunProbe:
    """The run's :class:`RunProbe` on ``runtime`` (``dataset``: what the run trains on),
    after checking that ``config``'s dataset can be probed (a ``ValueError`` otherwise)."""
    if not config.online_probe:
        return RunProbe()
    if config.user_dataset:
        raise ValueError(
            "online_probe=true scores a built-in dataset's test split, and your own dataset "
            "has none the trainer knows; leave online_probe=false and evaluate on your own "
            "split (contrastkit.evaluate.OnlineProbe, or the Lightning callback "
            "OnlineProbeCallback, take a training and a held-out dataset)")
    if config.task == "text_pairs":
        from contrastkit.evaluate.text_pairs import OnlineRetrieval

        test = load_dataset(config.dataset, "test", config.data_dir, config.download)
        retrieval = OnlineRetrieval(test, runtime.device)
        return RunProbe(retrieval if runtime.is_main else None)
    from contrastkit.evaluate.online import OnlineProbe
    from contrastkit.evaluate.run import has_labels

    train = (dataset if pretrain_split(config.dataset) == "train" else
             load_dataset(config.dataset, "train", config.data_dir, config.download))
    if not has_labels(train):
        raise ValueError(f"online_probe=true needs class labels, and dataset={config.dataset} "
                         f"has none; leave online_probe=false")
    test = load_dataset(config.dataset, "test", config.data_dir, config.download)
    if not runtime.is_main:
        return RunProbe()
    return RunProbe(OnlineProbe(train, test, train.info.num_classes, seed=config.seed,
                                num_workers=config.num_workers))
