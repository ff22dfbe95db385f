"""The similarity monitor in a PyTorch Lightning ``Trainer``: :class:`SimilarityMonitorCallback`;
and the online probe (:class:`~contrastkit.evaluate.online.OnlineProbe`, a linear head and a kNN
scored on a held-out split at each epoch's end): :class:`OnlineProbeCallback`.

Needs PyTorch Lightning (``pip install 'contrastkit[lightning]'``): the callback subclasses
``lightning.pytorch.Callback``, or ``pytorch_lightning.Callback`` where only that package is
installed. After each training batch it feeds the two views' embeddings to a
:class:`~contrastkit.monitor.SimilarityMonitor` and, at the end of each of its windows, sends
the window's statistics to every logger of the trainer at the trainer's global step.

The embeddings come from the output of ``training_step``. By default the step returns a dict
with the two views under ``"u"`` and ``"v"`` (and, optionally, class ids under ``"labels"``)::

    def training_step(self, batch, batch_idx):
        u, v = self(batch[0]), self(batch[1])
        return {"loss": self.criterion(u, v), "u": u, "v": v}

Any other output works with ``embeddings=``: a function ``(outputs, batch) -> (u, v)`` or
``(u, v, labels)``. A batch whose ``training_step`` returned ``None`` (Lightning skips it) is not
monitored. Under DDP each process monitors the batches it sees, and Lightning's loggers write
from process 0 only.

The monitor's progress (its step, its alerts and the current window) is part of Lightning's
checkpoints (the callback's ``state_dict``), so that a run resumed with
``Trainer.fit(..., ckpt_path=...)`` continues the window it was in, as if it had not stopped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import torch

from contrastkit.monitor import SimilarityMonitor
from contrastkit.typing import Samples

__all__ = ["SimilarityMonitorCallback", "views_from_outputs"]

INSTALL_HINT = "pip install 'contrastkit[lightning]'"

Embeddings = tuple[torch.Tensor, ...]


def import_lightning() -> ModuleType:
    """``lightning.pytorch``, or ``pytorch_lightning`` where only that is installed; an
    ``ImportError`` naming the extra to install when neither is."""
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("contrastkit.integrations.lightning needs PyTorch Lightning (the package "
                      f"'lightning' or 'pytorch_lightning'): {INSTALL_HINT}")


try:
    _Callback: type = import_lightning().Callback
except ImportError:  # the module still imports; the callback's constructor says what to install
    _Callback = object


def views_from_outputs(outputs: Any, batch: Any) -> Embeddings:
    """The default ``embeddings``: ``outputs["u"]``, ``outputs["v"]`` and, when present,
    ``outputs["labels"]``, from the dict that ``training_step`` returned."""
    if not isinstance(outputs, Mapping) or "u" not in outputs or "v" not in outputs:
        keys = sorted(outputs) if isinstance(outputs, Mapping) else type(outputs).__name__
        raise ValueError("SimilarityMonitorCallback: training_step must return a dict with the "
                         "two views' embeddings under 'u' and 'v' (and optionally 'labels'), "
                         f"or the callback needs an embeddings= function; got {keys}")
    labels = outputs.get("labels")
    return (outputs["u"], outputs["v"]) if labels is None else (
        outputs["u"], outputs["v"], labels)


class SimilarityMonitorCallback(_Callback):
    """Monitor the similarities of a Lightning run's embeddings and log them.

    Args:
        monitor: the :class:`~contrastkit.monitor.SimilarityMonitor` to feed (its ``n`` and
            ``log_every`` set the theory's reference values and the window); a default
            ``SimilarityMonitor()`` when omitted.
        embeddings: ``(outputs, batch) -> (u, v)`` or ``(u, v, labels)``, the two views of the
            batch (``(B, d)`` each, row ``i`` the positive pair ``i``); by default
            :func:`views_from_outputs`.
        prefix: put before each statistic's name in the logs (``similarity/negative_var``).

    :attr:`last` holds the latest window's statistics (``None`` before the first). A batch whose
    ``training_step`` returned ``None`` (which Lightning skips; the hook is given an empty
    ``outputs``) is skipped here too: the monitor is not fed and its step does not advance.

    The callback's :meth:`state_dict` (saved by Lightning in each checkpoint, under a key that
    holds ``prefix``) carries the monitor's progress and :attr:`last`; a run resumed from the
    checkpoint continues the monitor's step and current window exactly. Under DDP the
    checkpoint holds process 0's monitor, from which every process continues.

    Example::

        from lightning.pytorch import Trainer
        from contrastkit.integrations.lightning import SimilarityMonitorCallback
        from contrastkit.monitor import SimilarityMonitor

        callback = SimilarityMonitorCallback(SimilarityMonitor(n=len(dataset), log_every=50))
        Trainer(callbacks=[callback]).fit(model, loader)
    """

    def __init__(self, monitor: SimilarityMonitor | None = None, *,
                 embeddings: Callable[[Any, Any], Embeddings] | None = None,
                 prefix: str = "similarity/") -> None:
        if _Callback is object:
            import_lightning()  # raises, naming the extra
        super().__init__()
        if monitor is not None and not isinstance(monitor, SimilarityMonitor):
            raise ValueError("monitor must be a contrastkit.monitor.SimilarityMonitor, got "
                             f"{type(monitor).__name__}")
        if embeddings is not None and not callable(embeddings):
            raise ValueError("embeddings must be a function (outputs, batch) -> (u, v[, labels])"
                             f", got {type(embeddings).__name__}")
        if not isinstance(prefix, str):
            raise ValueError(f"prefix must be a string, got {type(prefix).__name__}")
        self.monitor = SimilarityMonitor() if monitor is None else monitor
        self.embeddings = views_from_outputs if embeddings is None else embeddings
        self.prefix = prefix
        self.last: dict[str, float] | None = None
        self._loaded = False  # a loaded window still on the CPU, moved with the first batch

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint: the class and ``prefix``, so that
        callbacks with different prefixes keep their own monitors."""
        return self._generate_state_key(prefix=self.prefix)

    def state_dict(self) -> dict[str, Any]:
        """The monitor's progress (:meth:`SimilarityMonitor.state_dict
        <contrastkit.monitor.SimilarityMonitor.state_dict>`) and :attr:`last`, which Lightning
        saves in its checkpoints."""
        return {"monitor": self.monitor.state_dict(),
                "last": None if self.last is None else dict(self.last)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (Lightning calls it when a run resumes from a
        checkpoint): the monitor's step, alerts and current window, and :attr:`last`. The
        window is read onto the CPU and moved to the embeddings' device with the next
        batch."""
        if not isinstance(state_dict, Mapping) or "monitor" not in state_dict:
            found = (sorted(state_dict) if isinstance(state_dict, Mapping)
                     else type(state_dict).__name__)
            raise ValueError("SimilarityMonitorCallback.load_state_dict needs the callback's "
                             f"state_dict() (with 'monitor' and 'last'), got {found}")
        self.monitor.load_state_dict(state_dict["monitor"], map_location="cpu")
        last = state_dict.get("last")
        self.last = None if last is None else dict(last)
        self._loaded = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        """Feed the batch's embeddings to the monitor; log a finished window's statistics. A
        skipped batch (``training_step`` returned ``None``: ``outputs`` is ``None`` or empty)
        is not monitored."""
        if outputs is None or (isinstance(outputs, Mapping) and not outputs):
            return
        views = _checked(self.embeddings(outputs, batch))
        if self._loaded:
            self._move_window(getattr(views[0], "device", None))
        stats = self.monitor.update(*views)
        if stats is None:
            return
        self.last = stats
        metrics = {f"{self.prefix}{name}": value for name, value in stats.items()}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)

    def _move_window(self, device: torch.device | None) -> None:
        """Move a window loaded onto the CPU to ``device``, where the embeddings are."""
        self._loaded = False
        if isinstance(device, torch.device) and device.type != "cpu":
            self.monitor.load_state_dict(self.monitor.state_dict(), map_location=device)


class OnlineProbeCallback(_Callback):
    """Score a Lightning run's features with an online linear probe and kNN at the end of each
    training epoch (:class:`~contrastkit.evaluate.online.OnlineProbe`), and log them.

    Args:
        train: a map-style dataset of ``(x, label)``: the kNN's bank and the linear head's data
            (``uint8`` images are divided by 255, floating-point samples used as they are).
        test: the held-out dataset of ``(x, label)`` the probe is scored on.
        num_classes: the number of classes.
        encoder: ``pl_module -> nn.Module``, the module whose features are probed: its
            ``features(x)`` when it has that method, else its output. By default the
            LightningModule itself.
        seed, knn_k, knn_temperature, num_workers: as :class:`~contrastkit.evaluate.online.
            OnlineProbe`'s.
        prefix: put before each metric's name in the logs (by default none:
            ``online_linear_top1``, ``online_knn_top1``, as in ``pretrain``'s metrics.jsonl).

    At each training epoch's end the probe's accuracies go to every logger of the trainer at
    the trainer's global step, and to :attr:`last`. It changes nothing of the training (no
    gradient, no BatchNorm statistic, no random number: the run's weights are those of a run
    without it). Under DDP process 0 probes. The probe's head is part of Lightning's
    checkpoints (the callback's ``state_dict``), so a resumed run continues it.

    Example::

        callback = OnlineProbeCallback(train_set, test_set, num_classes=10,
                                       encoder=lambda module: module.backbone)
        Trainer(callbacks=[callback]).fit(model, loader)
    """

    def __init__(self, train: Samples, test: Samples, num_classes: int, *,
                 encoder: Callable[[Any], torch.nn.Module] | None = None, seed: int = 0,
                 knn_k: int = 200, knn_temperature: float = 0.1, num_workers: int = 0,
                 prefix: str = "") -> None:
        if _Callback is object:
            import_lightning()  # raises, naming the extra
        super().__init__()
        if encoder is not None and not callable(encoder):
            raise ValueError(f"encoder must be a function pl_module -> nn.Module, got "
                             f"{type(encoder).__name__}")
        if not isinstance(prefix, str):
            raise ValueError(f"prefix must be a string, got {type(prefix).__name__}")
        from contrastkit.evaluate.online import OnlineProbe  # (loads the evaluation)

        self.probe = OnlineProbe(train, test, num_classes, seed=seed, knn_k=knn_k,
                                 knn_temperature=knn_temperature, num_workers=num_workers)
        self.encoder = encoder
        self.prefix = prefix
        self.last: dict[str, float] | None = None

    @property
    def state_key(self) -> str:
        return self._generate_state_key(prefix=self.prefix)

    def state_dict(self) -> dict[str, Any]:
        """The probe's state (:meth:`OnlineProbe.state_dict
        <contrastkit.evaluate.online.OnlineProbe.state_dict>`) and :attr:`last`."""
        return {"probe": self.probe.state_dict(),
                "last": None if self.last is None else dict(self.last)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (Lightning calls it when a run resumes)."""
        if not isinstance(state_dict, Mapping) or "probe" not in state_dict:
            found = (sorted(state_dict) if isinstance(state_dict, Mapping)
                     else type(state_dict).__name__)
            raise ValueError("OnlineProbeCallback.load_state_dict needs the callback's "
                             f"state_dict() (with 'probe' and 'last'), got {found}")
        self.probe.load_state_dict(state_dict["probe"])
        last = state_dict.get("last")
        self.last = None if last is None else dict(last)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        """Probe the encoder's features (on process 0) and log the accuracies."""
        if not trainer.is_global_zero:
            return
        encoder = pl_module if self.encoder is None else self.encoder(pl_module)
        self.last = self.probe(encoder)
        metrics = {f"{self.prefix}{name}": value for name, value in self.last.items()}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)


def _checked(views: Any) -> Embeddings:
    """``views`` if it is ``(u, v)`` or ``(u, v, labels)``."""
    if not isinstance(views, (tuple, list)) or len(views) not in (2, 3):
        raise ValueError("SimilarityMonitorCallback: embeddings must return (u, v) or "
                         f"(u, v, labels), got {type(views).__name__}"
                         + (f" of length {len(views)}" if isinstance(views, (tuple, list))
                            else ""))
    return tuple(views)
