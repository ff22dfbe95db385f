"""``contrastkit geometry EMBEDDINGS``: the geometry diagnostics of saved embeddings."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._paths import check_writable_file

#: The accepted range of ``--bins``: a histogram finer than this is not legible and its
#: computation and figure grow with the number of bins.
MAX_BINS = (1, 10_000)

DESCRIPTION = """\
Diagnose saved embeddings. EMBEDDINGS is a .npy, .npz or .pt file holding either two views
(an array of shape (2, B, d), a pair of (B, d) arrays, or a mapping with keys "u" and "v") or
one set of features (an array (B, d), or a mapping with key "features"); a mapping may also
hold "labels". Two views give the positive / negative / within-view similarity statistics of
the central paper (Def. 4.1), alignment and uniformity; labels add the same-class /
different-class split and the neural-collapse metrics; features give the same-class /
different-class similarity statistics and the collapse metrics. Two views also give the
false-negative statistics: row i of the first view is an anchor, row i of the second its
positive, the other rows its negatives; the share of negatives that score at or above the
anchor's positive and, with --dataset-size and --batch-size (the run's), above the theory's
band of negative similarities (Theorem 5.5, eq. 11); with labels, or duplicate ids (a mapping's
"duplicates", or --duplicates), how many of those are same-class or duplicate pairs. The
numbers are printed as a table and written to a JSON file; --plot also writes a histogram of
the similarities."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "geometry",
        help="similarity statistics, alignment/uniformity and collapse metrics of embeddings",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("embeddings", type=Path, metavar="EMBEDDINGS", help=".npy/.npz/.pt file")
    parser.add_argument(
        "--labels", type=Path, help=".npy/.pt file of integer class ids, one per row"
    )
    parser.add_argument(
        "--duplicates", type=Path,
        help=".npy/.pt file of integer duplicate ids, one per pair (equal ids: duplicates)"
    )
    parser.add_argument(
        "--dataset-size", type=int, metavar="N",
        help="the run's dataset size: with --batch-size, the theory's band of negatives"
    )
    parser.add_argument(
        "--batch-size", type=int, metavar="M",
        help="the run's batch size: with --dataset-size, the theory's band of negatives"
    )
    parser.add_argument(
        "--json",
        type=Path,
        dest="json_path",
        help="where to write the JSON (default: EMBEDDINGS with suffix .geometry.json)",
    )
    parser.add_argument("--plot", type=Path, help="write a similarity histogram to this PNG")
    parser.add_argument(
        "--bins",
        type=int,
        default=50,
        help=f"histogram bins (with --plot), {MAX_BINS[0]} to {MAX_BINS[1]}; default 50",
    )
    parser.add_argument(
        "--distance",
        action="store_true",
        help="histogram of LMCL distances (1 - s)/2 instead of cosine similarities",
    )
    parser.add_argument(
        "--uniformity",
        action="store_true",
        help="also compute the exact uniformity (all pairs: O(B^2 d), slow for large B)",
    )
    parser.add_argument(
        "--method",
        choices=("auto", "moments", "pairs"),
        default="auto",
        help="similarity statistics method: closed-form moments or block-wise over all pairs",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    check_bins(args.bins)
    check_band_options(args.dataset_size, args.batch_size)
    json_path = args.json_path or args.embeddings.with_suffix(".geometry.json")
    check_writable_file(json_path, "--json")
    if args.plot is not None:
        check_writable_file(args.plot, "--plot")
    from contrastkit.geometry import diagnose, load_embeddings, load_labels, plot_histogram

    data = load_embeddings(args.embeddings)
    if args.labels is not None:
        data["labels"] = load_labels(args.labels)
    if args.duplicates is not None:
        data["duplicates"] = load_labels(args.duplicates, "--duplicates")
    report = diagnose(data, method=args.method, with_uniformity=args.uniformity,
                      dataset_size=args.dataset_size, batch_size=args.batch_size)
    if args.plot is not None:
        report["histogram"] = plot_histogram(data, args.plot, bins=args.bins,
                                             distance=args.distance)
    report = {"input": str(args.embeddings), **report}
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"\nwrote {json_path}" + (f" and {args.plot}" if args.plot is not None else ""))
    return 0


def print_report(report: dict) -> None:
    """Print the report as aligned ``name  value`` rows, one section per group."""
    rows = []
    for key, value in report.items():
        if key == "histogram":
            continue
        if isinstance(value, dict):
            rows.append(("", ""))
            rows.append((f"[{key}]", ""))
            rows.extend((f"  {name}", _format(item)) for name, item in value.items())
        else:
            rows.append((key, _format(value)))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}".rstrip())


def _format(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def check_band_options(dataset_size: int | None, batch_size: int | None) -> None:
    """``--dataset-size`` and ``--batch-size`` come together, ``2 <= M <= N``."""
    if (dataset_size is None) != (batch_size is None):
        given, missing = (("--dataset-size", "--batch-size") if batch_size is None
                          else ("--batch-size", "--dataset-size"))
        raise ValueError(f"{given} needs {missing} too: the theory's band of negative "
                         f"similarities (Theorem 5.5) is for a dataset size and a batch size")
    if dataset_size is None or batch_size is None:
        return
    if batch_size < 2 or dataset_size < batch_size:
        raise ValueError(f"--batch-size must be at least 2 and at most --dataset-size "
                         f"({dataset_size}), got {batch_size}")


def check_bins(bins: int) -> None:
    """``--bins`` must lie in :data:`MAX_BINS`."""
    low, high = MAX_BINS
    if not low <= bins <= high:
        raise ValueError(f"--bins must be between {low} and {high}, got {bins}")


