"""``gpukit search``: top-k search of .npy embeddings, written as a TREC run.

Output lines are ``qid Q0 docid rank score runname`` with ranks from 1 in
the index's order (score descending, ties by smaller corpus row). Note that
trec_eval re-sorts by score and breaks ties by doc id, not by this rank.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import torch

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option, check_output_path
from gpukit.errors import InputFormatError
from gpukit.index import ExactIndex, FaissIndex, IndexUsageError, SearchIndex


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "search",
        help=COMMAND_HELP["search"],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--corpus", action=StoreOnce, required=True, help="(N, d) corpus embeddings, .npy")
    parser.add_argument("--queries", action=StoreOnce, required=True, help="(Q, d) query embeddings, .npy")
    parser.add_argument("--doc-ids", action=StoreOnce, help="one doc id per line (default: row numbers)")
    parser.add_argument("--query-ids", action=StoreOnce, help="one query id per line (default: row numbers)")
    parser.add_argument(
        "--index", default="exact", help="'exact' (torch) or a faiss factory string such as 'IVF1024,Flat'"
    )
    parser.add_argument("-k", type=int, required=True, help="results per query (1 <= k <= N)")
    parser.add_argument("--out", action=StoreOnce, required=True, help="TREC run file to write")
    parser.add_argument("--metric", choices=("ip", "cosine", "l2"), default="ip")
    parser.add_argument(
        "--dtype", choices=("fp32", "fp16", "bf16"), default="fp32", help="storage dtype of --index exact"
    )
    add_device_option(parser)
    parser.add_argument("--nprobe", type=int, help="IVF lists to visit (faiss IVF indexes)")
    parser.add_argument("--ef-search", type=int, help="HNSW search breadth (faiss HNSW indexes)")
    parser.add_argument("--run-name", default="gpukit", help="last column of the run file")
    parser.set_defaults(func=run_search)


def run_search(args: argparse.Namespace) -> int:
    """Load, index, search and write the run; returns the exit code."""
    if any(ch.isspace() for ch in args.run_name) or not args.run_name:
        raise IndexUsageError(f"--run-name must be one non-empty word; got {args.run_name!r}")
    check_output_path(args.out, "--out")
    corpus = load_embeddings(args.corpus)
    queries = load_embeddings(args.queries)
    if corpus.shape[1] != queries.shape[1]:
        problem = f"dimension {queries.shape[1]} differs from the corpus dimension {corpus.shape[1]}"
        raise InputFormatError(args.queries, None, problem)
    doc_ids = read_ids(args.doc_ids, corpus.shape[0])
    query_ids = read_ids(args.query_ids, queries.shape[0])
    index, search_options = build_index(args, corpus.shape[1])
    # The user chose the device, so moving the loaded arrays there is explicit.
    index.add(corpus.to(index.device))
    scores, positions = index.search(queries.to(index.device), args.k, **search_options)
    # Finite inputs can still overflow (fp16 storage, huge values); a run file
    # must not carry inf/nan scores, which trec_eval would rank arbitrarily.
    overflow = torch.nonzero(~torch.isfinite(scores) & (positions >= 0))
    if overflow.numel():
        row = int(overflow[0, 0])
        problem = f"query row {row} scores {float(scores[row, int(overflow[0, 1])])}: the embeddings overflow float32 or --dtype {args.dtype}"
        raise InputFormatError(args.queries, None, problem)
    write_trec_run(args.out, query_ids, doc_ids, scores, positions, args.run_name)
    return 0


def build_index(args: argparse.Namespace, dim: int) -> tuple[SearchIndex, dict[str, int]]:
    """The index the flags describe and the keyword options for its search()."""
    if args.index == "exact":
        if args.nprobe is not None or args.ef_search is not None:
            raise IndexUsageError("--nprobe and --ef-search apply to faiss indexes, not --index exact")
        return ExactIndex(dim, metric=args.metric, dtype=args.dtype, device=args.device), {}
    if args.dtype != "fp32":
        raise IndexUsageError("--dtype applies to --index exact; faiss indexes read float32")
    options = {"nprobe": args.nprobe, "efSearch": args.ef_search}
    index = FaissIndex(dim, spec=args.index, metric=args.metric, device=args.device)
    return index, {name: value for name, value in options.items() if value is not None}


def load_embeddings(path: str) -> torch.Tensor:
    """A 2-D numeric .npy file of finite values as a float32 CPU tensor."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputFormatError(path, None, f"cannot read .npy: {exc}") from exc
    if isinstance(array, np.lib.npyio.NpzFile):  # np.load opens .npz archives too
        array.close()
        raise InputFormatError(path, None, "a .npz archive; save one (N, d) array with numpy.save as .npy")
    numeric = np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)
    if array.ndim != 2 or not numeric:
        raise InputFormatError(path, None, f"expected a 2-D numeric array; got {array.dtype} {array.shape}")
    with np.errstate(over="ignore"):  # values past float32's range become inf, reported below
        tensor = torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))
    bad = torch.nonzero(~torch.isfinite(tensor))
    if bad.numel():
        row, col = (int(x) for x in bad[0])
        raise InputFormatError(path, None, f"row {row} (from 0), column {col}: {float(array[row, col])} is not a finite float32")
    return tensor


def read_ids(path: str | None, rows: int) -> list[str]:
    """Distinct ids from a UTF-8 file with one id per line (``\\n`` or ``\\r\\n``
    ends a line), or the row numbers when ``path`` is None."""
    if path is None:
        return [str(row) for row in range(rows)]
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputFormatError(path, None, f"cannot read ids: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(path, line, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if text.startswith("\ufeff"):
        # The BOM would otherwise become part of the first id and never match the qrels.
        raise InputFormatError(path, 1, "starts with a UTF-8 byte-order mark; save the file without it")
    ids = text.split("\n")
    if ids and ids[-1] == "":
        ids.pop()
    ids = [value.removesuffix("\r") for value in ids]
    first_line: dict[str, int] = {}
    for line, value in enumerate(ids, start=1):
        if not value or value != value.strip() or len(value.split()) != 1:
            raise InputFormatError(path, line, f"an id must be one word without spaces; got {value!r}")
        if value in first_line:
            raise InputFormatError(path, line, f"id {value!r} repeats line {first_line[value]}; ids must be distinct")
        first_line[value] = line
    if len(ids) != rows:
        raise InputFormatError(path, None, f"{len(ids)} ids for {rows} embedding rows")
    return ids


def write_trec_run(
    path: str | os.PathLike[str],
    query_ids: list[str],
    doc_ids: list[str],
    scores: torch.Tensor,
    positions: torch.Tensor,
    run_name: str,
) -> None:
    """Write ``qid Q0 docid rank score runname`` lines; ``-1`` (missing) results are skipped.

    Scores use ``%.9g``, which round-trips float32 exactly.
    """
    score_rows = scores.cpu().tolist()
    position_rows = positions.cpu().tolist()
    with open(path, "w", encoding="utf-8") as handle:
        for query_id, row_scores, row_positions in zip(query_ids, score_rows, position_rows):
            lines = [
                f"{query_id} Q0 {doc_ids[position]} {rank} {score:.9g} {run_name}\n"
                for rank, (position, score) in enumerate(zip(row_positions, row_scores), start=1)
                if position >= 0
            ]
            handle.writelines(lines)
