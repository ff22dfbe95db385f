"""``contrastkit pretrain``: contrastive pretraining from a config file and key=value overrides."""

from __future__ import annotations

import argparse
import sys
import textwrap


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain an encoder with a contrastive loss (default: SimCLR + VRNS on digits)",
        description=textwrap.fill(
            "Pretrain a backbone + projector with any contrastkit loss, optionally plus VRNS. "
            "Settings come from the defaults, then an optional YAML file, then key=value "
            "overrides (e.g. `loss=dcl temperature=0.1 vrns=0 epochs=50`). The run folder "
            "runs/<name>/ receives config.yaml, metrics.jsonl, checkpoints (last.pt, "
            "previous.pt) and curves.png. Under torchrun the batch is split over processes "
            "and the loss sees the global batch."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_defaults_epilog(),
    )
    parser.add_argument("settings", nargs="*", metavar="CONFIG.yaml | key=value",
                        help="a YAML config file and/or key=value overrides")
    parser.add_argument("--resume", nargs="?", const="last", choices=("last", "previous"),
                        help="continue the run from its last (default) or previous checkpoint")
    parser.add_argument("--overwrite", action="store_true",
                        help="start the run again even if its folder holds checkpoints")
    parser.set_defaults(func=run)


def _defaults_epilog() -> str:
    from dataclasses import fields

    from contrastkit.train.config import PretrainConfig

    # the fields' defaults, without building (and validating) a config: --help stays instant
    lines = [f"  {f.name}={f.default}" for f in fields(PretrainConfig)]
    return "keys and defaults:\n" + "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import torch.distributed as dist

    from contrastkit.train import TrainingStopped, load_config, pretrain

    files = [s for s in args.settings if "=" not in s]
    overrides = [s for s in args.settings if "=" in s]
    if len(files) > 1:
        raise ValueError(f"give at most one config file, got {files}")
    config = load_config(files[0] if files else None, overrides)
    try:
        result = pretrain(config, resume=args.resume, overwrite=args.overwrite)
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    except TrainingStopped as stopped:
        print(stopped, file=sys.stderr)
        return 128 + stopped.signal_number  # the shell's convention for "ended by a signal"
    finally:
        if dist.is_initialized():  # started by the loop under torchrun
            dist.destroy_process_group()
    if result.history:
        last = result.history[-1]
        print(f"pretrained {config.epochs} epochs: loss {last['loss']:.4f}, in-batch "
              f"negative-similarity variance {last['neg_sim_var']:.4f}; run folder "
              f"{result.run_dir}")
        print(f"next: contrastkit evaluate {result.run_dir}")
    return 0
