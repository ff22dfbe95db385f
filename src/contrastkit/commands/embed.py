"""``contrastkit embed RUN``: the trained encoder's features of a split, to .npz or .npy."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._paths import check_writable_file


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed",
        help="write a run's backbone features and projector outputs, with labels, to .npz/.npy",
        description=(
            "Pass a split of the run's dataset, without augmentation, through the encoder of "
            "its checkpoint and write the backbone features, the projector outputs and the "
            "labels. A .npz file holds the arrays 'features' (backbone, N x f), 'embeddings' "
            "(projector, N x d) and 'labels' (N); a .npy file holds 'embeddings' alone. Of a "
            "text-pair run (task=text_pairs), every distinct text of the split, with 'texts' "
            "(N) in place of the labels. "
            "`contrastkit geometry FILE` reads either (of a .npz, the features with their "
            "labels). Progress goes to standard error. A run trained with your own encoder or "
            "dataset is embedded in Python: contrastkit.evaluate.embed_run(RUN, encoder=..., "
            "dataset=...)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="the run folder (runs/<name>)")
    parser.add_argument("--split", default="train", choices=("train", "test"),
                        help="which split of the run's dataset to embed")
    # no default shown by the formatter: the help says it (it depends on RUN and --split)
    parser.add_argument("--out", type=Path, metavar="FILE", default=argparse.SUPPRESS,
                        help="a .npz or .npy file (default: RUN/embeddings-SPLIT.npz)")
    parser.add_argument("--checkpoint", default="last", choices=("last", "previous"),
                        help="which checkpoint of RUN to read")
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA when available), cpu, cuda or cuda:<i>")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show each stage on standard error")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contrastkit.evaluate.embed import check_suffix, embed_run
    from contrastkit.evaluate.run import CLI_OPTIONS, check_run_folder
    from contrastkit.train.checkpoint import Advice
    from contrastkit.train.run_folder import EMBEDDINGS

    check_run_folder(args.run_dir, "RUN")
    given = getattr(args, "out", None)
    out = given or args.run_dir / EMBEDDINGS.format(split=args.split)
    check_suffix(out)
    check_writable_file(out, "--out" if given else "the default output file")
    try:
        path = embed_run(args.run_dir, args.split, out, args.checkpoint, args.device,
                         args.progress)
    except Advice as error:  # the API's words (checkpoint="previous") -> the options'
        raise ValueError(error.advice(CLI_OPTIONS)) from error
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    print(f"wrote the {args.split} split of {args.run_dir} to {path}")
    return 0
