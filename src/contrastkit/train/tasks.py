"""What a run trains (``task``), each task's preset (its main job) and the settings only some
tasks use.

- ``views`` (the default): one encoder on two augmented views of each image.
- ``image_text``: an image tower and a text tower on the image-caption pairs of a captioned
  dataset (``captioned_shapes``, ``captions``; see ``docs/image-text.md``). The towers are the
  built-in ones (``backbone`` with a linear projection to ``projector_out``; a
  ``text_layers``-layer transformer of width ``text_width`` (64) over ``context_length`` byte
  tokens, 96 by default: the captioned shapes' longest caption is 87 bytes; a longer caption
  is cut short, with a warning), or the open_clip architecture ``clip_model`` (the ``clip``
  extra), its weights read from the local file ``clip_checkpoint`` when set.
- ``text_pairs``: one sentence encoder on the rows of a text-pair dataset (``paraphrases``,
  ``text_files``; see ``docs/text.md``): the built-in byte-level transformer (the text tower
  of ``image_text``, with ``text_dropout`` in its layers, projected linearly to
  ``projector_out``) or the text tower of the open_clip architecture ``clip_model``.
  ``text_mode=pairs`` trains anchors against their positives, the rows' negatives as explicit
  negatives (``text_negatives=pool``: every anchor meets every row's, as sentence-transformers
  does; ``own``: each anchor its own row's); ``text_mode=simcse`` trains every distinct text
  against itself under two dropout masks (unsupervised SimCSE; ``text_dropout`` must be > 0).
"""

from __future__ import annotations

from dataclasses import fields

from contrastkit.checks.scalars import check_choice, check_probability_below_one

#: What a run trains: ``views`` (one encoder, two augmented views of each image),
#: ``image_text`` (an image tower and a text tower on image-caption pairs) or ``text_pairs``
#: (a sentence encoder on text pairs or plain sentences).
TASKS = ("views", "image_text", "text_pairs")
#: The settings of a text tower (``image_text`` and ``text_pairs``).
TEXT_SETTINGS = ("clip_model", "clip_checkpoint", "context_length", "text_width",
                 "text_layers")
#: The settings only ``task=text_pairs`` uses.
TEXT_PAIR_SETTINGS = ("text_dropout", "text_mode", "text_negatives")
#: ``text_mode``'s choices: ``pairs`` (anchors against their positives) or ``simcse`` (every
#: distinct text against itself, under two dropout masks).
TEXT_MODES = ("pairs", "simcse")
#: ``text_negatives``' choices: ``pool`` (every anchor meets every row's negatives) or ``own``
#: (each anchor its own row's).
TEXT_NEGATIVES = ("pool", "own")
#: The defaults that setting ``task`` brings, under the settings given with it: the main job
#: of each task. ``task=image_text`` trains CLIP-style on the bundled captioned shapes: AdamW
#: (CLIP's optimizer, lr 1e-3 per 256 samples) with weight decay 0.1, InfoNCE with a learned
#: temperature, no VRNS, and the strided small CNN as the image tower (a quarter of the small
#: CNN's cost at 32 x 32). ``task=text_pairs`` trains on the bundled paraphrases as
#: sentence-transformers' MultipleNegativesSymmetricRankingLoss does: InfoNCE at temperature
#: 0.05 (its scale 20) with the rows' hard negatives, AdamW (lr 2e-3 at batch 64, warm-up 5 %
#: of the steps), no VRNS, no dropout.
TASK_PRESETS = {
    "image_text": {"name": "shapes-image-text", "dataset": "captioned_shapes",
                   "backbone": "small_cnn_strided", "loss": "info_nce", "vrns": 0.0,
                   "learn_temperature": True, "optimizer": "adamw", "weight_decay": 0.1,
                   "batch_size": 128, "epochs": 30},
    "text_pairs": {"name": "paraphrases-text", "dataset": "paraphrases", "loss": "info_nce",
                   "temperature": 0.05, "vrns": 0.0, "optimizer": "adamw",
                   "base_lr": 8e-3, "weight_decay": 0.01, "batch_size": 64, "epochs": 2,
                   "warmup_share": 0.05},
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
    open_clip's settings only with a text task, the text-pair settings only with
    ``task=text_pairs`` (``text_mode`` and ``text_negatives`` among their choices,
    ``text_dropout`` in ``[0, 1)`` and > 0 for SimCSE), ``online_probe`` not with
    ``task=image_text``, leaves the built-in towers' settings at the task's defaults with an
    open_clip model (``clip_model``, an architecture that builds offline), and sets
    ``clip_checkpoint`` only with ``clip_model``."""
    check_choice("text_mode", config.text_mode, TEXT_MODES)
    check_choice("text_negatives", config.text_negatives, TEXT_NEGATIVES)
    check_probability_below_one("text_dropout", config.text_dropout, "a dropout probability")
    defaults = {**{f.name: f.default for f in fields(config)},
                **TASK_PRESETS.get(config.task, {})}
    unused, why = _unused_settings(config)
    changed = [key for key in unused if getattr(config, key) != defaults[key]]
    if changed:
        raise ValueError(f"{', '.join(f'{key}={getattr(config, key)}' for key in changed)} "
                         f"would be ignored with task={config.task}: {why}; remove the "
                         f"setting")
    if config.task == "image_text" and config.online_probe:
        raise ValueError("online_probe=true probes one encoder's image features with class "
                         "labels; task=image_text trains two towers on image-caption pairs: "
                         "leave online_probe=false and measure with contrastkit evaluate "
                         "(retrieval)")
    if config.task == "text_pairs" and config.text_mode == "simcse":
        if config.clip_model:
            raise ValueError(f"text_mode=simcse needs the built-in text tower: its dropout "
                             f"(text_dropout) is SimCSE's only augmentation, and "
                             f"clip_model={config.clip_model}'s text tower has none")
        if not config.text_dropout > 0:
            raise ValueError("text_mode=simcse needs text_dropout > 0: dropout is SimCSE's "
                             "only augmentation (its two passes of a sentence would be "
                             "identical); give text_dropout=0.1, SimCSE's")
    if config.clip_model:
        from contrastkit.models.open_clip_towers import check_model_name

        check_model_name(config.clip_model, "clip_model")


def _unused_settings(config) -> tuple[tuple[str, ...], str]:
    """The settings ``config``'s task and text tower leave unused, and why."""
    unused: tuple[str, ...]
    if config.task == "views":
        return TEXT_SETTINGS + TEXT_PAIR_SETTINGS, "they belong to the text tasks"
    if config.task == "image_text":
        unused, why = TEXT_PAIR_SETTINGS, "they belong to task=text_pairs"
    else:
        unused, why = ("backbone", "projector_hidden"), "a sentence encoder has no image tower"
        if config.text_mode == "simcse":
            unused += ("text_negatives",)
            why += "; text_mode=simcse trains on sentences, without negatives"
    if config.clip_model:
        return unused + ("backbone", "projector_hidden", "projector_out", "context_length",
                         "text_width", "text_layers", "text_dropout"), (
            f"clip_model={config.clip_model} brings its own towers, embedding dimension "
            f"and tokenizer")
    why += ("; the built-in towers project linearly to projector_out, as CLIP does"
            + ("; clip_checkpoint needs clip_model" if config.clip_checkpoint else ""))
    return unused + ("projector_hidden", "clip_checkpoint"), why
