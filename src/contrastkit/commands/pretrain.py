"""``contrastkit pretrain``: contrastive pretraining from a config file and key=value overrides."""

from __future__ import annotations

import argparse
import shlex
import sys
import textwrap
from dataclasses import dataclass, field

from ._spelling import RULE, unrecognized

CHECKPOINTS = ("last", "previous")
HELP_WORDS = ("-h", "--help")
#: The options of pretrain, each mapped to whether it takes a value (``--resume``'s checkpoint
#: is a word of its own: ``--resume previous``).
OPTIONS = {"--resume": False, "--overwrite": False, "--progress": False,
           "--no-progress": False, "-h": False, "--help": False}


def register(subparsers) -> None:
    description = "\n\n".join(textwrap.fill(paragraph) for paragraph in (
        "Pretrain a backbone + projector with any contrastkit loss, optionally plus VRNS. "
        "Settings come from the defaults, then an optional YAML file, then key=value "
        "overrides (e.g. `loss=dcl temperature=0.1 vrns=0 epochs=50`), in any order with the "
        f"options. The rule of the whole command line: {RULE}. The run folder runs/<name>/ "
        "receives config.yaml, metrics.jsonl, checkpoints (last.pt, previous.pt) and "
        "curves.png; it is locked while the run trains. Under torchrun the batch is split "
        "over processes and the loss sees the global batch.",
        "The lr warms up linearly for warmup_epochs, capped at half the run (epochs=1 warms "
        "up over half an epoch), then decays along a cosine to 0 at the last step.",
        "--resume continues a run exactly where it stopped, with its saved settings: only "
        "those given on the command line change them (a default is not one). With a larger "
        "epochs=N it extends "
        "the run: the lr schedule becomes that of an N-epoch run (warm-up and cosine over N "
        "epochs), continued from the step reached: the lr jumps from the old schedule's end "
        "(near 0) to the new schedule's value at that step. A run that has completed its "
        "epochs is reported as complete.",
        "Epochs are counted as completed epochs everywhere (checkpoints, metrics.jsonl, "
        "eval.json). Exit status: 0 done, 1 the run diverged (a NaN or infinity; the "
        "checkpoints from before are kept), 2 a bad setting or an unusable run folder, "
        "128 + N stopped by signal N (after a checkpoint).",
    ))
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain an encoder with a contrastive loss (default: SimCLR + VRNS on digits)",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_defaults_epilog(),
    )
    # Everything from the first setting on is read by parse_settings, so that options may
    # follow settings (argparse cannot interleave them with a variable-length positional).
    parser.add_argument("settings", nargs=argparse.REMAINDER,
                        metavar="CONFIG.yaml | key=value | --resume [last|previous] | "
                                "--overwrite | --[no-]progress",
                        help="a YAML config file, key=value overrides and the options below, "
                             "in any order")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run from its last checkpoint (`--resume previous`: "
                             "from the one before), or extend it with a larger epochs=N")
    parser.add_argument("--overwrite", action="store_true",
                        help="start the run again even if its folder holds one (removes the "
                             "files a run and evaluate write, keeps others)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show the progress of each epoch (the setting progress=true|false, "
                             "as in evaluate, embed and reproduce)")
    parser.set_defaults(func=run, print_help=parser.print_help, run_settings=setting_defaults)


@dataclass
class Settings:
    """The words of the command line, sorted: config files, overrides and options."""

    files: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    resume: str | None = None
    overwrite: bool = False
    help: bool = False


def parse_settings(words: list[str], resume: bool = False, overwrite: bool = False,
                   progress: bool | None = None) -> Settings:
    """Sort ``words`` (config files, ``key=value``, ``--resume``, ``last`` / ``previous``,
    ``--overwrite``, ``--progress`` / ``--no-progress``, in any order); ``resume`` /
    ``overwrite`` / ``progress`` are the options argparse already read. ``last`` /
    ``previous`` choose the checkpoint ``--resume`` starts from; ``--[no-]progress`` is the
    setting ``progress=true|false``."""
    settings = Settings(resume="last" if resume else None, overwrite=overwrite)
    if progress is not None:
        settings.overrides.append(f"progress={str(progress).lower()}")
    checkpoint = None
    for index, word in enumerate(words):
        if word == "--resume":
            settings.resume = settings.resume or "last"
        elif word == "--overwrite":
            settings.overwrite = True
        elif word in ("--progress", "--no-progress"):
            settings.overrides.append(f"progress={str(word == '--progress').lower()}")
        elif word in HELP_WORDS:
            settings.help = True
        elif word in CHECKPOINTS:
            checkpoint = word
        elif word.startswith("-"):
            following = words[index + 1] if index + 1 < len(words) else None
            raise ValueError(unrecognized("pretrain", word, following, OPTIONS,
                                          setting_defaults()))
        elif "=" in word:
            settings.overrides.append(word)
        else:
            settings.files.append(word)
    if checkpoint is not None:
        if settings.resume is None:
            raise ValueError(f"{checkpoint!r} names a checkpoint to resume from; write "
                             f"--resume {checkpoint}")
        settings.resume = checkpoint
    if settings.resume and settings.overwrite:
        raise ValueError("--resume and --overwrite exclude each other: --resume continues the "
                         "run, --overwrite starts it again")
    if len(settings.files) > 1:
        raise ValueError(f"give at most one config file, got {settings.files}")
    return settings


def epochs(count: int) -> str:
    """``1 epoch``, ``2 epochs``."""
    return f"{count} epoch{'' if count == 1 else 's'}"


def setting_defaults() -> dict[str, object]:
    """The settings of a run (``PretrainConfig``'s fields) and their defaults, without building
    (and validating) a config, so that --help stays instant."""
    from dataclasses import fields

    from contrastkit.train.config import PretrainConfig

    return {f.name: f.default for f in fields(PretrainConfig)}


def _defaults_epilog() -> str:
    lines = [f"  {key}={default}" for key, default in setting_defaults().items()]
    return "settings (key=value) and their defaults:\n" + "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    settings = parse_settings(args.settings, args.resume, args.overwrite, args.progress)
    if settings.help:
        args.print_help()
        return 0
    import torch.distributed as dist

    from contrastkit.train import TrainingDiverged, TrainingStopped, load_config, pretrain
    from contrastkit.train.checkpoint import CLI_OPTIONS, Advice
    from contrastkit.train.run_folder import resumed_config

    file = settings.files[0] if settings.files else None
    try:
        # a resumed run keeps its saved settings: only those given here change them
        config = (resumed_config(file, settings.overrides) if settings.resume else
                  load_config(file, settings.overrides))
        result = pretrain(config, resume=settings.resume, overwrite=settings.overwrite)
    except Advice as error:  # the API's words (resume=..., overwrite=True) -> the options'
        raise ValueError(error.advice(CLI_OPTIONS)) from error
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    except TrainingStopped as stopped:
        print(stopped, file=sys.stderr)
        return 128 + stopped.signal_number  # the shell's convention for "ended by a signal"
    except TrainingDiverged as diverged:
        print(f"contrastkit pretrain: error: {diverged}", file=sys.stderr)
        return 1
    finally:
        if dist.is_initialized():  # started by the loop under torchrun
            dist.destroy_process_group()
    if result.already_complete:
        print(f"run {result.run_dir} is already complete ({config.epochs}/{config.epochs} "
              f"epochs); nothing to do (to train longer: --resume epochs=<more>)")
    elif result.history:
        last = result.history[-1]
        print(f"pretrained {epochs(last['epochs_completed'])}: loss {last['loss']:.4f}, "
              f"in-batch negative-similarity variance {last['neg_sim_var']:.4f}; run folder "
              f"{result.run_dir}")
        print(f"next: contrastkit evaluate {shlex.quote(str(result.run_dir))}")
    return 0
