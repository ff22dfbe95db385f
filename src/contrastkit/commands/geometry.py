"""``contrastkit geometry EMBEDDINGS``: the geometry diagnostics of saved embeddings."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._paths import check_writable_file

#: The accepted range of ``--bins``: a histogram finer than this is not legible and its
#: computation and figure grow with the number of bins.
MAX_BINS = (1, 10_000)
FORMATS = ".npy (NumPy array), .npz (NumPy arrays by name) or .pt/.pth (torch.save of tensors)"

DESCRIPTION = """\
Diagnose saved embeddings. EMBEDDINGS is a .npy, .npz or .pt file holding either two views
(an array of shape (2, B, d), a pair of (B, d) arrays, or a mapping with keys "u" and "v") or
one set of features (an array (B, d), or a mapping with key "features"); a mapping may also
hold "labels". Two views give the positive / negative / within-view similarity statistics of
the central paper (Def. 4.1), alignment and uniformity; labels add the same-class /
different-class split and the neural-collapse metrics; features give the same-class /
different-class similarity statistics and the collapse metrics. The numbers are printed as a
table and written to a JSON file; --plot also writes a histogram of the similarities."""


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
    json_path = args.json_path or args.embeddings.with_suffix(".geometry.json")
    check_writable_file(json_path, "--json")
    if args.plot is not None:
        check_writable_file(args.plot, "--plot")
    data = load_embeddings(args.embeddings)
    if args.labels is not None:
        data["labels"] = load_labels(args.labels)
    report = diagnose(data, method=args.method, with_uniformity=args.uniformity)
    if args.plot is not None:
        report["histogram"] = plot(data, args.plot, bins=args.bins, distance=args.distance)
    report = {"input": str(args.embeddings), **report}
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"\nwrote {json_path}" + (f" and {args.plot}" if args.plot is not None else ""))
    return 0


def load_embeddings(path: Path) -> dict:
    """Read EMBEDDINGS into ``{"u", "v"}`` or ``{"features"}`` (+ ``"labels"``) tensors."""
    raw = _read(path)
    if isinstance(raw, dict):
        data = {key: _tensor(raw[key], f"{path}[{key!r}]") for key in raw}
        if {"u", "v"} <= data.keys():
            return {key: data[key] for key in ("u", "v", "labels") if key in data}
        if "features" in data:
            return {key: data[key] for key in ("features", "labels") if key in data}
        raise ValueError(
            f"EMBEDDINGS {path} must hold keys 'u' and 'v', or 'features'; found {sorted(data)}"
        )
    if isinstance(raw, (list, tuple)):
        if len(raw) != 2:
            raise ValueError(f"EMBEDDINGS {path} holds a sequence of {len(raw)} items; expected 2")
        return {"u": _tensor(raw[0], f"{path}[0]"), "v": _tensor(raw[1], f"{path}[1]")}
    array = _tensor(raw, str(path))
    if array.dim() == 3 and array.shape[0] == 2:
        return {"u": array[0], "v": array[1]}
    if array.dim() == 2:
        return {"features": array}
    raise ValueError(
        f"EMBEDDINGS {path} must be an array of shape (2, B, d) (two views) or (B, d) "
        f"(features), got shape {tuple(array.shape)}"
    )


def load_labels(path: Path):
    labels = _tensor(_read(path), str(path))
    if labels.dim() != 1:
        raise ValueError(f"--labels {path} must be 1-D, got shape {tuple(labels.shape)}")
    return labels


def diagnose(data: dict, method: str = "auto", with_uniformity: bool = False) -> dict:
    """All diagnostics that apply to ``data`` as one JSON-ready dict."""
    import torch

    from contrastkit import geometry

    labels = data.get("labels")
    if "u" in data:
        u, v = data["u"].double(), data["v"].double()
        stats = geometry.similarity_stats(u, v, labels, method=method)
        report = {
            "mode": "views",
            "pairs": u.shape[0],
            "dim": u.shape[1],
            "similarity": stats.as_dict(),
            "alignment": geometry.alignment(u, v),
            "uniformity_eq5": geometry.uniformity_approximation(
                stats.negative_mean, stats.negative_var
            ),
        }
        if with_uniformity:
            report["uniformity"] = (geometry.uniformity(u) + geometry.uniformity(v)) / 2
        features = torch.cat([u, v])
        feature_labels = None if labels is None else torch.cat([labels, labels])
    else:
        features = data["features"].double()
        feature_labels = labels
        report = {"mode": "features", "samples": features.shape[0], "dim": features.shape[1]}
        if labels is not None:
            report["class_similarity"] = geometry.class_similarity_stats(
                features, labels, method=method
            ).as_dict()
        if with_uniformity:
            report["uniformity"] = geometry.uniformity(features)
    report["effective_rank"] = geometry.effective_rank(features)
    if feature_labels is not None:
        report["neural_collapse"] = geometry.neural_collapse(features, feature_labels).as_dict()
        report["nearest_class_mean_accuracy"] = geometry.nearest_class_mean_accuracy(
            features, feature_labels
        )
    return report


def plot(data: dict, path: Path, bins: int, distance: bool) -> dict:
    from contrastkit import geometry

    scale = "distance" if distance else "similarity"
    if "u" in data:
        histogram = geometry.similarity_histogram(
            data["u"], data["v"], data.get("labels"), bins=bins, scale=scale
        )
    else:
        histogram = geometry.similarity_histogram(
            data["features"], None, data.get("labels"), bins=bins, scale=scale
        )
    geometry.plot_similarity_histogram(histogram, path)
    return histogram.as_dict()


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


def check_bins(bins: int) -> None:
    """``--bins`` must lie in :data:`MAX_BINS`."""
    low, high = MAX_BINS
    if not low <= bins <= high:
        raise ValueError(f"--bins must be between {low} and {high}, got {bins}")


def _read(path: Path):
    """The content of a .npy, .npz or .pt file; anything else, or a file that does not parse
    in the format its suffix names, is a ``ValueError`` naming the file and the formats."""
    if path.is_dir():
        raise ValueError(f"{path} is a folder; expected a file: {FORMATS}")
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz", ".pt", ".pth"):
        raise ValueError(f"{path}: expected {FORMATS}; got suffix {suffix!r}")
    try:
        return _parse(path, suffix)
    except Exception as error:  # whatever the parser raises, the file is the problem
        raise ValueError(
            f"{path} is not a readable {suffix} file ({type(error).__name__}: {error}); "
            f"expected {FORMATS}"
        ) from error


def _parse(path: Path, suffix: str):
    if suffix == ".npy":
        import numpy as np

        return np.load(path, allow_pickle=False)
    if suffix == ".npz":
        import numpy as np

        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def _tensor(value, where: str):
    import numpy as np
    import torch

    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{where} must be an array or tensor, got {type(value).__name__}")
    return value
