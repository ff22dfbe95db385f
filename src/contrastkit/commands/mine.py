"""``contrastkit mine RUN``: hard negatives mined from a corpus with a text-pair run, written as
a pairs folder that ``dataset=text_files`` trains on."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._paths import check_writable_folder


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "mine",
        help="mine hard negatives from a corpus with a text-pair run, for retraining",
        description=(
            "Embed a corpus with the sentence encoder of a text-pair run (task=text_pairs) and "
            "give each training row (anchor, positive[, negatives]) the K corpus texts its "
            "anchor is most cosine-similar to, exactly (chunked matrix products), never its "
            "anchor or one of that anchor's positives (by text), under the filters given: "
            "--max-score S keeps candidates scored <= S; --margin M those <= the positive's "
            "score - M; --relative-margin R those <= the positive's score x (1 - R). Equal "
            "scores go to the text met first in the corpus. Rows left with fewer than K "
            "candidates are dropped. Written to OUT: train.jsonl (anchor, positive, "
            "negative_1 ... negative_K), test.jsonl (the run's test split, as it is) and "
            "mining.json (what was done); then `contrastkit pretrain task=text_pairs "
            "dataset=text_files data_dir=OUT` retrains on them. Progress goes to standard "
            "error."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN",
                        help="the text-pair run folder (runs/<name>)")
    # no default shown by the formatter: the help says it
    parser.add_argument("--corpus", type=Path, metavar="FILE", default=argparse.SUPPRESS,
                        help="the texts to mine from: a .txt file (one a line) or a pairs file "
                             "(.csv, .tsv, .jsonl: every column's texts) (default: the rows' "
                             "positives and negatives)")
    parser.add_argument("--anchors", type=Path, metavar="FILE", default=argparse.SUPPRESS,
                        help="a pairs file of the rows to mine for (default: the run's "
                             "training split)")
    parser.add_argument("--out", type=Path, metavar="FOLDER", default=argparse.SUPPRESS,
                        help="the output folder (default: RUN/mined)")
    parser.add_argument("--negatives", type=int, default=3, metavar="K",
                        help="negatives mined per row")
    parser.add_argument("--max-score", type=float, default=argparse.SUPPRESS, metavar="S",
                        help="keep only candidates scored <= S (cosine)")
    parser.add_argument("--margin", type=float, default=argparse.SUPPRESS, metavar="M",
                        help="keep only candidates scored <= the positive's score - M")
    parser.add_argument("--relative-margin", type=float, default=argparse.SUPPRESS,
                        metavar="R",
                        help="keep only candidates scored <= the positive's score x (1 - R)")
    parser.add_argument("--keep-negatives", action="store_true",
                        help="keep each row's own negatives before the mined ones (they are "
                             "then never mined again)")
    parser.add_argument("--checkpoint", default="last", choices=("last", "previous"),
                        help="which checkpoint of RUN to read")
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA when available), cpu, cuda or cuda:<i>")
    parser.add_argument("--batch-size", type=int, default=256,
                        help="texts embedded per forward pass")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show each stage on standard error")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contrastkit.checks.scalars import (
        check_count,
        check_nonnegative,
        check_probability_below_one,
        check_real,
    )
    from contrastkit.evaluate.run import CLI_OPTIONS, check_run_folder
    from contrastkit.evaluate.text_mining import DEFAULT_OUT, mine_run
    from contrastkit.train.checkpoint import Advice

    check_count("--negatives", args.negatives, 1)
    check_count("--batch-size", args.batch_size, 1)
    # every option is checked, in its own name, before any work
    if hasattr(args, "max_score"):
        check_real("--max-score", args.max_score)
    if hasattr(args, "margin"):
        check_nonnegative("--margin", args.margin)
    if hasattr(args, "relative_margin"):
        check_probability_below_one("--relative-margin", args.relative_margin,
                                    "the share below the positive's score")
    check_run_folder(args.run_dir, "RUN")
    given = getattr(args, "out", None)
    out = given or args.run_dir / DEFAULT_OUT
    check_writable_folder(out, "--out" if given else "the default output folder")
    try:
        record = mine_run(args.run_dir, out, corpus=getattr(args, "corpus", None),
                          anchors=getattr(args, "anchors", None), k=args.negatives,
                          max_score=getattr(args, "max_score", None),
                          margin=getattr(args, "margin", None),
                          relative_margin=getattr(args, "relative_margin", None),
                          keep_negatives=args.keep_negatives, checkpoint=args.checkpoint,
                          device=args.device, batch_size=args.batch_size,
                          progress=args.progress)
    except Advice as error:  # the API's words (checkpoint="previous") -> the options'
        raise ValueError(error.advice(CLI_OPTIONS)) from error
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    dropped = (f", {record['rows_dropped']} dropped (fewer than {record['k']} candidates "
               f"passed the filters)" if record["rows_dropped"] else "")
    print(f"mined {record['k']} negatives for {record['rows_written']} of {record['rows']} "
          f"rows from {record['corpus']} texts{dropped}: mean cosine "
          f"{record['positive_score_mean']:.3f} to the positives, "
          f"{record['negative_score_mean']:.3f} to the negatives")
    print(f"  wrote {record['train_file']}" + (f" and {record['test_file']}"
                                                if record["test_file"] else ""))
    print(f"  retrain: contrastkit pretrain task=text_pairs dataset=text_files "
          f"data_dir={out}")
    return 0
