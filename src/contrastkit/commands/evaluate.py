"""``contrastkit evaluate RUN``: linear probe, kNN and negative-similarity variance of a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .pretrain import epochs

NOT_SAVED = 1  # the exit status when the results were printed but could not be written
# the retrieval directions printed, by their prefix in eval.json: ``{prefix}_r{k}`` (%),
# ``{prefix}_mrr10``, ``{prefix}_ndcg10`` and ``{prefix}_map_r``
RETRIEVAL_DIRECTIONS = (("image_to_text", "image -> text"), ("text_to_image", "text -> image"),
                        ("query_to_corpus", "query -> corpus"))
#: the key of eval.json's results per prefix (contrastkit.evaluate.prefixes.PREFIXES, which a
#: test checks; the evaluation is not imported here)
PREFIXES = "matryoshka"
#: what the pair statistics of each task are measured on, by a key only its results have
PAIRS = (("image_to_text_r1", "image-caption pairs"), ("query_to_corpus_map_r", "text pairs"))


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="linear probe, kNN and negative-similarity variance of a pretraining run",
        description=(
            "Evaluate the encoder of a pretraining run with the paper's protocol (App. D): a "
            "linear probe on frozen, L2-normalized backbone features (multinomial logistic "
            "regression solved exactly by L-BFGS, at the penalty 5e-5 that the paper's 200 "
            "epochs of SGD amount to on CIFAR; or that SGD itself with --linear-solver sgd) "
            "and a kNN classifier (cosine, temperature-weighted), top-1 and "
            "top-5 on the test split; and the variance of negative-pair similarities among "
            "augmented positive pairs at the projector output (Table 1). Results go to "
            "RUN/eval.json; progress goes to standard error."
        ),
        epilog=(
            "exit status: 0 when the results were printed and written; 1 when they were "
            "printed but RUN/eval.json could not be written (a read-only run folder, a full "
            "disk); 2 on bad input (no such run or checkpoint, a bad option)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN", help="the run folder (runs/<name>)")
    parser.add_argument("--checkpoint", default="last", choices=("last", "previous"),
                        help="which checkpoint of RUN to evaluate")
    parser.add_argument("--linear-solver", choices=("lbfgs", "sgd"), default="lbfgs",
                        help="the linear probe: lbfgs (exact, deterministic) or the paper's "
                             "SGD (lr 0.1, batch 256, cosine)")
    # no default shown by the formatter: the help says it (it applies to --linear-solver sgd)
    parser.add_argument("--linear-epochs", type=int, default=argparse.SUPPRESS,
                        help="epochs of the SGD probe (--linear-solver sgd only; default: 100)")
    parser.add_argument("--knn-k", type=int, default=200,
                        help="neighbours that vote in the kNN classifier (capped at the "
                             "training-set size)")
    parser.add_argument("--knn-temperature", type=float, default=0.1,
                        help="temperature t of the kNN votes, weighted exp(similarity / t)")
    parser.add_argument("--pairs", type=int, default=5000,
                        help="augmented positive pairs for the similarity variance (capped at "
                             "the training-set size)")
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA when available), cpu, cuda or cuda:<i>")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the pair augmentations (and of the SGD probe's "
                             "initialization and sample order)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show each stage on standard error: a bar on a terminal, plain "
                             "lines otherwise")
    parser.set_defaults(func=run)


#: measure_run's options by the names they have here.
OPTIONS = {"checkpoint": "--checkpoint", "linear_solver": "--linear-solver",
           "linear_epochs": "--linear-epochs", "knn_k": "--knn-k",
           "knn_temperature": "--knn-temperature", "pairs": "--pairs"}


def run(args: argparse.Namespace) -> int:
    from contrastkit.evaluate import measure_run, write_results
    from contrastkit.evaluate.run import CLI_OPTIONS, RESULTS, check_options, check_run_folder
    from contrastkit.train.checkpoint import Advice

    # every option is checked, in its own name, before any work
    linear_epochs = getattr(args, "linear_epochs", None)
    check_options(args.checkpoint, args.linear_solver, linear_epochs, args.knn_k,
                  args.knn_temperature, args.pairs, names=OPTIONS)
    check_run_folder(args.run_dir, "RUN")
    try:
        results = measure_run(args.run_dir, args.checkpoint, linear_epochs, args.knn_k,
                              args.knn_temperature, args.pairs, args.device, args.seed,
                              args.progress, args.linear_solver)
    except Advice as error:  # the API's words (checkpoint="previous") -> the options'
        raise ValueError(error.advice(CLI_OPTIONS)) from error
    except FileNotFoundError as error:
        raise ValueError(str(error)) from error
    _print_results(results, args.knn_k)
    try:
        path = write_results(args.run_dir, results)
    except OSError as error:
        print(f"contrastkit evaluate: error: could not write {Path(args.run_dir) / RESULTS} "
              f"({error.strerror or error}); the results above are not saved", file=sys.stderr)
        return NOT_SAVED
    print(f"  written to {path}")
    return 0


def _print_results(results: dict, knn_k: int) -> None:
    print(f"run {results['run']} ({epochs(results['epochs_completed'])} completed)")
    if "zero_shot_top1" in results:
        print(f"  zero-shot     top-1 {results['zero_shot_top1']:6.2f} %")
    for line in _retrieval_lines(results):
        print(f"  {line}")
    if "retrieval_corpus" in results:
        print(f"  ({results['retrieval_queries']} queries, {results['retrieval_corpus']} "
              f"documents: chance R@1 {100 / results['retrieval_corpus']:.2f} %)")
    if "linear_top1" in results:
        print(f"  linear probe  top-1 {results['linear_top1']:6.2f} %   "
              f"top-5 {results['linear_top5']:6.2f} %")
        used = results["protocol"]["knn_k"]  # knn_k capped at the training split's size
        every = ", every training image" if used < knn_k else ""
        print(f"  kNN (k={used}{every})   top-1 {results['knn_top1']:6.2f} %   "
              f"top-5 {results['knn_top5']:6.2f} %")
    pairs = next((what for key, what in PAIRS if key in results), "augmented pairs")
    print(f"  negative-pair similarity over {results['pairs']} {pairs}: "
          f"variance {results['neg_sim_var']:.4f}, mean {results['neg_sim_mean']:.4f}")
    if PREFIXES in results:
        print("  each prefix of the embedding (matryoshka_dims):")
    for dim, measured in results.get(PREFIXES, {}).items():
        lines = _retrieval_lines(measured)
        if "knn_top1" in measured:
            lines.append(f"kNN of the embedding  top-1 {measured['knn_top1']:6.2f} %   "
                         f"top-5 {measured['knn_top5']:6.2f} %")
        for line in lines:
            print(f"    {dim:>5} dims  {line}")


def _retrieval_lines(results: dict) -> list[str]:
    """One line per retrieval direction that ``results`` holds: its recalls, MRR@10, nDCG@10
    and MAP@R."""
    lines = []
    for direction, name in RETRIEVAL_DIRECTIONS:
        shown = [f"R@{key.rsplit('_r', 1)[1]} {value:6.2f} %" for key, value in results.items()
                 if key.startswith(f"{direction}_r")]
        shown += [f"{label} {results[key]:.4f}" for label, key in (
            ("MRR@10", f"{direction}_mrr10"), ("nDCG@10", f"{direction}_ndcg10"),
            ("MAP@R", f"{direction}_map_r")) if key in results]
        if shown:
            lines.append(f"{name}  " + "   ".join(shown))
    return lines
