"""Throughput of exact hard-negative mining (``evaluate.mine_hard_negatives``) against its floor,
the chunked matrix products alone.

    python -m benchmarks.mine                       # CPU: 2 000 queries x 100 000 documents
    python -m benchmarks.mine --device cuda         # GPU: 1 000 000 queries x 1 000 000 documents
    python -m benchmarks.mine --write-docs          # also rewrite its section of docs/benchmarks.md

Random float32 embeddings (seeded, ``d = 128``); each query has a positive (itself plus noise)
and one excluded corpus index, with ``margin=0.05`` and ``k = 10``, the cosine scores of the
module's defaults (1 024 queries x 65 536 documents a block). The floor is the same blocks'
``queries @ corpus.T`` and nothing else: what any exact search must compute. Times are the
median of ``--repeats`` calls after one untimed call; on a GPU each call ends with a
synchronization.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks._report import add_write_docs_flag, machine_description, median_seconds, publish

SIZES = {"cpu": (2_000, 100_000), "cuda": (1_000_000, 1_000_000)}
DIM, K, MARGIN = 128, 10, 0.05
QUERY_CHUNK, CORPUS_CHUNK = 1024, 65536


def inputs(queries: int, documents: int, device: str):
    """Seeded queries, corpus, positives and excluded indices on ``device``."""
    import torch

    generator = torch.Generator().manual_seed(0)
    corpus = torch.randn(documents, DIM, generator=generator)
    query = torch.randn(queries, DIM, generator=generator)
    positives = query + 0.5 * torch.randn(queries, DIM, generator=generator)
    exclude = torch.randint(0, documents, (queries,), generator=generator)
    return query.to(device), corpus.to(device), positives.to(device), exclude


def synchronized(fn, device: str):
    import torch

    def call():
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    return call


def floor(queries, corpus) -> None:
    """The blocks' matrix products alone (unit rows, as the cosine mining computes)."""
    from contrastkit.dtypes import full_float32
    from contrastkit.rows import unit_rows

    queries, corpus = unit_rows(queries), unit_rows(corpus)
    with full_float32():
        for start in range(0, queries.shape[0], QUERY_CHUNK):
            chunk = queries[start:start + QUERY_CHUNK]
            for column in range(0, corpus.shape[0], CORPUS_CHUNK):
                chunk @ corpus[column:column + CORPUS_CHUNK].T


def measure(queries: int, documents: int, device: str, repeats: int) -> dict:
    from contrastkit.evaluate import mine_hard_negatives

    query, corpus, positives, exclude = inputs(queries, documents, device)

    def mine():
        return mine_hard_negatives(query, corpus, K, positives=positives, exclude=exclude,
                                   margin=MARGIN, query_chunk=QUERY_CHUNK,
                                   corpus_chunk=CORPUS_CHUNK)

    mined = median_seconds(synchronized(mine, device), repeats=repeats)
    products = median_seconds(synchronized(lambda: floor(query, corpus), device),
                              repeats=repeats)
    return {"mine": mined, "floor": products}


def markdown(queries: int, documents: int, device: str, repeats: int, times: dict,
             command: str) -> str:
    pairs = queries * documents
    return "\n".join([
        f"Machine: {machine_description()}" + (f", {_gpu_name()}" if device != "cpu" else ""),
        "",
        f"Command: `{command}` ({queries:,} queries x {documents:,} documents, d = {DIM}, "
        f"float32, k = {K}, margin = {MARGIN}, one excluded index per query; median of "
        f"{repeats} calls).",
        "",
        "| | seconds | queries/s | scores/s | of the floor's time |",
        "|---|---|---|---|---|",
        f"| `mine_hard_negatives` | {times['mine']:.2f} | {queries / times['mine']:,.0f} | "
        f"{pairs / times['mine']:.3g} | {times['mine'] / times['floor']:.2f}x |",
        f"| floor: the matrix products alone | {times['floor']:.2f} | "
        f"{queries / times['floor']:,.0f} | {pairs / times['floor']:.3g} | 1x |",
    ])


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mine",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:<i>")
    parser.add_argument("--queries", type=int, default=None,
                        help="queries (default: 2 000 on the CPU, 1 000 000 on a GPU)")
    parser.add_argument("--documents", type=int, default=None,
                        help="corpus size (default: 100 000 on the CPU, 1 000 000 on a GPU)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    kind = "cpu" if args.device == "cpu" else "cuda"
    queries = args.queries or SIZES[kind][0]
    documents = args.documents or SIZES[kind][1]
    times = measure(queries, documents, args.device, args.repeats)
    command = "python -m benchmarks.mine" + ("" if kind == "cpu" else f" --device {args.device}")
    if args.queries or args.documents:
        command += f" --queries {queries} --documents {documents}"
    publish("mine" if kind == "cpu" else "mine_gpu",
            markdown(queries, documents, args.device, args.repeats, times, command),
            args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
