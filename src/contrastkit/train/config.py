"""The one typed configuration object of a pretraining run.

A :class:`PretrainConfig` is built from its defaults, a YAML file and ``key=value`` overrides,
in that order (:func:`~.config_files.load_config`); it is immutable, and the resolved config is
saved as ``runs/<name>/config.yaml``. An unknown key is an error that suggests the closest
valid one (or lists them).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from contrastkit.checks.scalars import (
    check_choice,
    check_count,
    check_margin_band,
    check_nonnegative,
    check_positive,
    check_probability_below_one,
    check_real,
)

from .config_values import (
    PRECISIONS,
    check_device_name,
    check_value_type,
    parse_value,
    translated_settings,
)
from .loggers import logger_names
from .matryoshka import check_matryoshka_settings
from .tasks import TASK_PRESETS, TASKS, check_task_settings, task_preset

# Each optimizer's settings beyond lr and weight_decay; changing another one is an error.
OPTIMIZER_SETTINGS = {"sgd": ("momentum",), "lars": ("momentum",),
                      "adamw": ("adamw_beta1", "adamw_beta2", "adamw_eps")}
OPTIMIZERS = tuple(OPTIMIZER_SETTINGS)
# base_lr when the config leaves it unset: SGD's and LARS's 0.3 (the central paper's CIFAR
# setting), PyTorch's AdamW default 1e-3 for an adaptive optimizer (both per 256 samples).
DEFAULT_BASE_LR = {"sgd": 0.3, "lars": 0.3, "adamw": 1e-3}
#: ``polarization_reduction``'s choices (those of ``contrastkit.losses.polarization``, which a
#: test checks; the losses are not imported here).
POLARIZATION_REDUCTIONS = ("mean", "sum")
#: Settings that say where and how a run executes, not what it computes: a run resumes with
#: them changed (a moved run folder, another device), and a reproduction's cell is the same
#: cell whatever they are.
EXECUTION_SETTINGS = ("runs_dir", "name", "data_dir", "download", "device", "num_workers",
                      "progress", "checkpoint_every", "log_every", "logger", "compile",
                      "stop_on_collapse", "collapse_patience", "online_probe")

# The config key that sets each loss hyperparameter (the losses' constructor argument names):
# a registered loss receives those of its declared ``hyperparameters`` that appear here.
LOSS_SETTINGS = {"temperature": "temperature", "scale": "siglip_scale", "bias": "siglip_bias",
                 "beta": "beta", "tau_plus": "tau_plus"}


@dataclass(frozen=True)
class PretrainConfig:
    """Everything that defines a pretraining run. The defaults are the main job: SimCLR + VRNS
    on scikit-learn's digits with a small CNN, on the CPU, in about a minute.

    ``vrns`` is the weight lambda of the VRNS term (Def. 5.7, n = the dataset size); 0 turns it
    off. ``polarization`` is the weight of LMCL's distance-polarization regularizer over the
    band ``(delta_plus, delta_minus)``; 0 (default) turns it off. ``polarization_reduction``
    reduces it over the batch's pairs: ``mean`` (default; at most ``(delta_minus -
    delta_plus)^2 / 4`` whatever the batch) or ``sum`` (each pair once, so its weight grows
    with the square of the batch; LMCL's Eq. 10 leaves the choice open). Unlike the band, it
    may be set with ``polarization=0``, where it does nothing, so that a sweep can cross it
    with the unregularized baseline. ``base_lr`` is scaled by
    ``batch_size / 256`` (``batch_size`` is the global batch over all processes); left unset
    (``None``) it is the optimizer's default, 0.3 for ``sgd`` and ``lars``, 1e-3 for ``adamw``
    (:attr:`peak_base_lr`).
    ``temperature`` applies to every loss but siglip and spectral; ``siglip_scale`` and
    ``siglip_bias`` to siglip; ``beta`` (hardness) to hcl, hscl and hucl; ``tau_plus`` (class
    prior) to hcl. supcon, scl and hscl use the dataset's labels. A setting that the run would
    not use (``loss=siglip temperature=0.5``, ``delta_plus`` with ``polarization=0``) is an
    error rather than silently ignored. ``loss`` is any name in the loss registry
    (``contrastkit.losses.names()``), including losses registered by your own code.

    The learning rate warms up linearly for ``warmup_epochs``, capped at half the run (so
    ``epochs=1`` warms up over half an epoch; the default 3 of 50 is unchanged), then follows
    a cosine decay to 0 at ``epochs`` (:meth:`warmup_steps`). ``warmup_share`` sets the
    warm-up as a share of the run's optimizer steps instead (in ``[0, 0.5]``; the central
    paper's App. D warms up for 10 of 200 epochs, ``warmup_share=0.05``), the same share at
    every batch size and length; with it set, ``warmup_epochs`` must be left at its default.
    ``device`` is ``auto``, ``cpu``, ``cuda``, ``cuda:<i>`` or ``mps``.

    ``optimizer`` is ``sgd`` (with ``momentum``), ``lars`` (with ``momentum``) or ``adamw``
    (with ``adamw_beta1``, ``adamw_beta2``, ``adamw_eps``, PyTorch's defaults; an adaptive
    optimizer wants a much smaller ``base_lr``, hence its default 1e-3). ``user_encoder``,
    ``user_dataset`` and ``user_augment`` are set by :func:`~contrastkit.train.pretrain` when
    it is given the user's own objects (their type's name; empty for the built-in ones):
    they tell ``--resume``, ``contrastkit evaluate`` and ``contrastkit embed`` that the run
    cannot be rebuilt from the config alone.

    Every ``log_every`` steps the similarity monitor's window goes to the loggers that
    ``logger`` names: ``csv``, ``tensorboard``, ``wandb``, several separated by commas
    (``logger=csv,tensorboard``), or ``none``; metrics.jsonl is always written.

    ``grad_cache_chunk`` > 0 computes each step's gradient by gradient caching
    (:func:`~contrastkit.train.grad_cache.grad_cache`) with chunks of that many rows per
    process: the gradient of the whole batch's loss in the memory of one chunk (BatchNorm sees
    chunk statistics); 0 (default), or a chunk at least the per-process batch, is the plain
    step.

    ``precision`` is the float format a step computes in (:mod:`~contrastkit.train.precision`):
    ``bf16`` (autocast bfloat16, no loss scaling), ``fp16`` (autocast float16 with a
    ``GradScaler``), ``fp32``, or ``auto`` (default): ``bf16`` on a CUDA GPU that supports it,
    ``fp16`` on an older one, ``fp32`` on the CPU and MPS. The earlier ``amp`` setting is read as
    ``amp=true`` -> ``precision=auto``, ``amp=false`` -> ``precision=fp32``.

    ``compile=true`` runs the training step's encoder through ``torch.compile`` (the default
    inductor backend; on the CPU it needs a C++ compiler). It pays a one-time compilation (tens of
    seconds for the small CNN, minutes for a ResNet) for faster steps afterwards; the result
    differs from the eager run's only by float rounding (fused kernels reorder sums). Eager
    (``false``) is the default and the reference. The losses' own kernels stay eager either way.

    ``stop_on_collapse`` (default ``true``) stops a run whose embeddings have collapsed for
    ``collapse_patience`` (5) consecutive epochs, after that epoch's checkpoint: an epoch is
    collapsed when its in-batch negative-pair similarity mean (``neg_sim_mean``) is above
    :data:`~contrastkit.train.monitoring.COLLAPSE_NEG_SIM_MEAN` (0.9). ``false`` trains on,
    still marking such epochs; a stopped run continues with ``--resume
    stop_on_collapse=false``. ``online_probe=true`` scores a linear head and a kNN on the test
    split at each epoch's end (:mod:`.online_probe`), leaving the weights bit for bit as they are.

    ``learn_temperature=true`` learns the loss's temperature (siglip: its scale and bias) as CLIP
    and SigLIP do, starting from ``temperature`` (``siglip_scale``, ``siglip_bias``); the loss
    must have one (see ``docs/learnable-temperature.md``).

    ``task`` is ``views`` (the default: one encoder, two augmented views of each image),
    ``image_text`` (an image tower and a text tower on image-caption pairs; see
    ``docs/image-text.md``) or ``text_pairs`` (a sentence encoder on text pairs or plain
    sentences; see ``docs/text.md``). Setting ``task`` brings that task's main job
    (:data:`~.tasks.TASK_PRESETS`) under the other settings given; the settings of the text towers
    (``context_length``, ``text_width``, ``text_layers``, ``clip_model``, ``clip_checkpoint``,
    ``text_dropout``, ``text_mode``, ``text_negatives``) are described in
    :mod:`~contrastkit.train.tasks`. ``matryoshka_dims=64,128,256`` trains on nested prefixes of
    the embedding, weighted by ``matryoshka_weights``: :mod:`~contrastkit.train.matryoshka`.
    """

    name: str = "digits-simclr-vrns"
    runs_dir: str = "runs"
    task: str = "views"
    dataset: str = "digits"
    data_dir: str = "data"
    download: bool = False
    backbone: str = "small_cnn"
    projector_hidden: int = 512
    projector_out: int = 128
    clip_model: str = ""
    clip_checkpoint: str = ""
    context_length: int = 96
    text_width: int = 64
    text_layers: int = 2
    text_dropout: float = 0.0
    text_mode: str = "pairs"
    text_negatives: str = "pool"
    user_encoder: str = ""
    user_dataset: str = ""
    user_augment: str = ""
    loss: str = "simclr"
    temperature: float = 0.2
    siglip_scale: float = 10.0
    siglip_bias: float = -10.0
    vrns: float = 30.0
    beta: float = 1.0
    tau_plus: float = 0.1
    polarization: float = 0.0
    delta_plus: float = 0.1
    delta_minus: float = 0.5
    polarization_reduction: str = "mean"
    learn_temperature: bool = False
    matryoshka_dims: str = ""
    matryoshka_weights: str = ""
    epochs: int = 50
    batch_size: int = 64
    grad_cache_chunk: int = 0
    base_lr: float | None = None
    warmup_epochs: int = 3
    warmup_share: float | None = None
    momentum: float = 0.9
    weight_decay: float = 1e-4
    optimizer: str = "sgd"
    adamw_beta1: float = 0.9
    adamw_beta2: float = 0.999
    adamw_eps: float = 1e-8
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    num_workers: int = 0
    checkpoint_every: int = 0
    progress: bool = True
    log_every: int = 50
    logger: str = "csv"
    stop_on_collapse: bool = True
    collapse_patience: int = 5
    online_probe: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            check_value_type(f.name, getattr(self, f.name), _field_type(f))
        check_choice("task", self.task, TASKS)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; "
                             f"got {self.optimizer!r}")
        for name in ("projector_hidden", "projector_out", "epochs", "context_length",
                     "text_width", "text_layers"):
            check_count(name, getattr(self, name), 1)
        check_count("batch_size", self.batch_size, 2)
        for name in ("temperature", "siglip_scale"):
            check_positive(name, getattr(self, name))
        if self.base_lr is not None:
            check_positive("base_lr", self.base_lr)
        check_real("siglip_bias", self.siglip_bias)
        check_probability_below_one("tau_plus", self.tau_plus, "the positive-class prior")
        check_margin_band(self.delta_plus, self.delta_minus)
        check_choice("polarization_reduction", self.polarization_reduction,
                     POLARIZATION_REDUCTIONS)
        for name in ("vrns", "beta", "polarization", "warmup_epochs", "momentum",
                     "weight_decay", "num_workers", "checkpoint_every", "grad_cache_chunk"):
            check_nonnegative(name, getattr(self, name))
        check_device_name(self.device, "device")
        check_choice("precision", self.precision, PRECISIONS)
        self._check_warmup()
        self._check_optimizer_settings()
        if not self.name or "/" in self.name:
            raise ValueError(f"name must be a non-empty folder name, got {self.name!r}")
        self._check_loss_settings()
        check_task_settings(self)
        check_matryoshka_settings(self)
        check_count("log_every", self.log_every, 1)
        check_count("collapse_patience", self.collapse_patience, 1)
        logger_names(self.logger)

    def _check_warmup(self) -> None:
        """``warmup_share`` lies in ``[0, 0.5]``, and with it ``warmup_epochs`` is left at its
        default (it would be ignored)."""
        if self.warmup_share is None:
            return
        share = check_real("warmup_share", self.warmup_share)
        if not 0.0 <= share <= 0.5:
            raise ValueError(f"warmup_share must be in [0, 0.5] (a share of the run's steps), "
                             f"got {share}")
        default = next(f.default for f in fields(self) if f.name == "warmup_epochs")
        if self.warmup_epochs != default:
            raise ValueError(f"warmup_epochs={self.warmup_epochs} would be ignored: "
                             f"warmup_share={share} sets the warm-up; remove one of them")

    def _check_optimizer_settings(self) -> None:
        """AdamW's betas lie in [0, 1) and its eps is > 0; a setting of another optimizer
        than ``optimizer`` (momentum with adamw, a beta with sgd) left at its default."""
        for name in ("adamw_beta1", "adamw_beta2"):
            check_probability_below_one(name, getattr(self, name), "an AdamW moment decay")
        check_positive("adamw_eps", self.adamw_eps)
        taken = OPTIMIZER_SETTINGS[self.optimizer]
        defaults = {f.name: f.default for f in fields(self)}
        changed = sorted({key for keys in OPTIMIZER_SETTINGS.values() for key in keys
                          if key not in taken and getattr(self, key) != defaults[key]})
        if changed:
            raise ValueError(
                f"{', '.join(f'{key}={getattr(self, key)}' for key in changed)} would be "
                f"ignored: optimizer={self.optimizer} takes {', '.join(taken)}; remove the "
                f"setting or choose an optimizer that uses it")

    def _check_loss_settings(self) -> None:
        """The loss is registered, and every loss setting that differs from its default (the
        task's preset's, :data:`~.tasks.TASK_PRESETS`) is one the objective uses."""
        from contrastkit import losses

        if self.loss not in losses.names():
            raise ValueError(f"loss must be one of {', '.join(losses.names())}; "
                             f"got {self.loss!r}")
        taken = losses.get(self.loss).hyperparameters
        unused = [key for parameter, key in LOSS_SETTINGS.items() if parameter not in taken]
        if self.polarization == 0:
            unused += ["delta_plus", "delta_minus"]
        defaults = {**{f.name: f.default for f in fields(self)}, **TASK_PRESETS.get(self.task, {})}
        changed = [key for key in unused if getattr(self, key) != defaults[key]]
        if changed:
            uses = [LOSS_SETTINGS[p] for p in taken if p in LOSS_SETTINGS]
            raise ValueError(
                f"{', '.join(f'{key}={getattr(self, key)}' for key in changed)} would be "
                f"ignored: loss={self.loss} takes {', '.join(uses) or 'no hyperparameter'}"
                + (" (delta_plus, delta_minus only with polarization > 0)"
                   if {"delta_plus", "delta_minus"} & set(changed) else "")
                + "; remove the setting or choose a loss that uses it")
        learnable = getattr(losses.get(self.loss), "learnable_settings", ())
        if self.learn_temperature and not learnable:
            raise ValueError(f"learn_temperature=true needs a loss with a learnable temperature "
                             f"or scale; loss={self.loss} has none")
        if self.learn_temperature:
            self._check_learned_start(learnable)

    def _check_learned_start(self, learnable: tuple[str, ...]) -> None:
        """With ``learn_temperature=true``, the settings the loss learns start within CLIP's
        clamp (a scale of at most 100), named as the config names them."""
        from contrastkit.losses.learnable import MAX_SCALE, within_clamp

        for parameter in learnable:
            key = LOSS_SETTINGS[parameter]
            if not within_clamp(parameter, getattr(self, key)):
                bound = (f">= {1 / MAX_SCALE:g}" if parameter == "temperature" else
                         f"<= {MAX_SCALE:g}")
                raise ValueError(
                    f"{key}={getattr(self, key):g} with learn_temperature=true starts the "
                    f"learned scale above {MAX_SCALE:g}, where CLIP clamps it: give {key} "
                    f"{bound}, or learn_temperature=false to keep it fixed")

    def loss_settings(self) -> dict[str, object]:
        """The loss hyperparameters under the losses' own argument names (``scale``, not
        ``siglip_scale``), for :func:`contrastkit.losses.build`."""
        return {parameter: getattr(self, key) for parameter, key in LOSS_SETTINGS.items()}

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir) / self.name

    @property
    def peak_base_lr(self) -> float:
        """``base_lr``, or the optimizer's default (:data:`DEFAULT_BASE_LR`) when it is unset."""
        return DEFAULT_BASE_LR[self.optimizer] if self.base_lr is None else self.base_lr

    @property
    def lr(self) -> float:
        """The peak learning rate, ``base_lr * batch_size / 256``."""
        return self.peak_base_lr * self.batch_size / 256

    @property
    def adamw_betas(self) -> tuple[float, float]:
        """AdamW's ``betas``, ``(adamw_beta1, adamw_beta2)``."""
        return self.adamw_beta1, self.adamw_beta2

    def warmup_steps(self, steps_per_epoch: int) -> int:
        """Optimizer steps of the linear warm-up: ``warmup_share`` of the run's steps (rounded
        to the nearest step), else ``warmup_epochs``, capped at half the run."""
        if self.warmup_share is not None:
            return round(self.warmup_share * self.epochs * steps_per_epoch)
        return int(min(self.warmup_epochs, self.epochs / 2) * steps_per_epoch)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def with_overrides(self, overrides: Mapping[str, object]) -> PretrainConfig:
        """A copy with ``overrides`` (values typed or strings to parse) applied."""
        parsed: dict[str, typing.Any] = typed_settings(translated_settings(overrides))
        task = parsed.get("task", self.task)
        if task != self.task:  # the new task's main job, under the settings given with it
            defaults = {f.name: f.default for f in fields(self)}
            parsed = {**task_preset(task, defaults), **parsed}
        return dataclasses.replace(self, **parsed)


def typed_settings(overrides: Mapping[str, object]) -> dict[str, object]:
    """``overrides`` (values typed or strings to parse, by config key) as the values of their
    fields' types; an unknown key is a ``ValueError`` that suggests the valid key closest to
    it, or lists the valid keys when none is close."""
    valid = {f.name: f for f in fields(PretrainConfig)}
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        # a typo (temprature), not a guess (lerning_rate is not learn_temperature)
        close = {key: difflib.get_close_matches(key, valid, n=1, cutoff=0.8) for key in unknown}
        named = ", ".join(key + (f" (did you mean {close[key][0]}?)" if close[key] else "")
                          for key in unknown)
        listed = "" if all(close.values()) else f"; valid keys: {', '.join(valid)}"
        raise ValueError(f"unknown config key{'s' if len(unknown) > 1 else ''} {named}{listed}")
    return {key: parse_value(key, value, _field_type(valid[key]))
            for key, value in overrides.items()}


def without_inert(settings: dict) -> dict:
    """``settings`` (a config's fields by name) with each setting that cannot change the run,
    given the others, at its default: ``polarization_reduction`` when ``polarization`` is 0,
    the one setting a config accepts where it does nothing (every other unused setting is an
    error), so that a sweep can cross it with the unregularized baseline."""
    if settings.get("polarization") == 0:
        return {**settings, "polarization_reduction": PretrainConfig.polarization_reduction}
    return dict(settings)


def _field_type(field: dataclasses.Field) -> type:
    hints = _type_hints()
    return hints[field.name]


@functools.cache
def _type_hints() -> dict[str, type]:
    """``PretrainConfig``'s field types, resolved once (resolving them is slow)."""
    return typing.get_type_hints(PretrainConfig)
