"""The similarity monitor in a PyTorch Lightning ``Trainer``: :class:`SimilarityMonitorCallback`.

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
``(u, v, labels)``. Under DDP each process monitors the batches it sees, and Lightning's loggers
write from process 0 only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import torch

from contrastkit.monitor import SimilarityMonitor

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

    :attr:`last` holds the latest window's statistics (``None`` before the first).

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

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        """Feed the batch's embeddings to the monitor; log a finished window's statistics."""
        stats = self.monitor.update(*_checked(self.embeddings(outputs, batch)))
        if stats is None:
            return
        self.last = stats
        metrics = {f"{self.prefix}{name}": value for name, value in stats.items()}
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
