"""What a run trains (``task``): ``views``, one encoder on two augmented views of each image, or
``image_text``, an image tower and a text tower on image-caption pairs; each task's preset (its
main job) and the settings only one task uses."""

from __future__ import annotations

from dataclasses import fields

from contrastkit.checks.scalars import check_choice

#: What a run trains: ``views`` (one encoder, two augmented views of each image) or
#: ``image_text`` (an image tower and a text tower on image-caption pairs).
TASKS = ("views", "image_text")
#: The settings only ``task=image_text`` uses (the text tower and the open_clip model).
IMAGE_TEXT_SETTINGS = ("clip_model", "clip_checkpoint", "context_length", "text_width",
                       "text_layers")
#: The defaults that setting ``task`` brings, under the settings given with it: the main job
#: of each task. ``task=image_text`` trains CLIP-style on the bundled captioned shapes: AdamW
#: (CLIP's optimizer, lr 1e-3 per 256 samples) with weight decay 0.1, InfoNCE with a learned
#: temperature, no VRNS, and the strided small CNN as the image tower (a quarter of the small
#: CNN's cost at 32 x 32).
TASK_PRESETS = {
    "image_text": {"name": "shapes-image-text", "dataset": "captioned_shapes",
                   "backbone": "small_cnn_strided", "loss": "info_nce", "vrns": 0.0,
                   "learn_temperature": True, "optimizer": "adamw", "weight_decay": 0.1,
                   "batch_size": 128, "epochs": 30},
}


def task_preset(task: str, defaults: dict[str, object]) -> dict[str, object]:
    """The settings that choosing ``task`` brings (:data:`TASK_PRESETS`); every setting of
    another task's preset that this one lacks returns to its default (``defaults``: the
    config's default of every setting)."""
    check_choice("task", task, TASKS)
    touched = {key for preset in TASK_PRESETS.values() for key in preset}
    return {**{key: defaults[key] for key in touched}, **TASK_PRESETS.get(task, {})}


def check_task_settings(config) -> None:
    """A ``ValueError`` unless ``config`` (a ``PretrainConfig``) sets the text tower's and
    open_clip's settings only with ``task=image_text`` (and ``online_probe`` only with
    ``task=views``), leaves the built-in towers' settings at the task's defaults with an
    open_clip model (``clip_model``, an architecture that builds offline), and sets
    ``clip_checkpoint`` only with ``clip_model``."""
    defaults = {**{f.name: f.default for f in fields(config)},
                **TASK_PRESETS.get(config.task, {})}
    unused: tuple[str, ...]
    if config.task == "views":
        unused, why = IMAGE_TEXT_SETTINGS, "they belong to task=image_text"
    elif config.clip_model:
        unused = ("backbone", "projector_hidden", "projector_out", "context_length",
                  "text_width", "text_layers")
        why = (f"clip_model={config.clip_model} brings its own towers, embedding dimension "
               f"and tokenizer")
    else:
        unused = ("projector_hidden",)
        why = ("the built-in towers project linearly to projector_out, as CLIP does"
               + ("; clip_checkpoint needs clip_model" if config.clip_checkpoint else ""))
        unused += ("clip_checkpoint",)
    changed = [key for key in unused if getattr(config, key) != defaults[key]]
    if changed:
        raise ValueError(f"{', '.join(f'{key}={getattr(config, key)}' for key in changed)} "
                         f"would be ignored with task={config.task}: {why}; remove the "
                         f"setting")
    if config.task == "image_text" and config.online_probe:
        raise ValueError("online_probe=true probes one encoder's features with class labels; "
                         "task=image_text trains two towers on image-caption pairs: leave "
                         "online_probe=false and measure with contrastkit evaluate "
                         "(zero-shot, retrieval)")
    if config.clip_model:
        from contrastkit.models.open_clip_towers import check_model_name

        check_model_name(config.clip_model, "clip_model")
