"""``gpukit pool RUN [RUN ...] --depth K [-o OUT]``: the depth-k pool of TREC runs (see gpukit.pooling)."""
from __future__ import annotations

import argparse
import sys

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, check_output_path, positive_int64
from gpukit.io.spooled_input import check_stdin_once


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pool",
        help=COMMAND_HELP["pool"],
        description="The union of each query's top K documents over the runs (trec_eval's ranking order: score "
        "descending, ties by docno descending), written as TREC qrels lines 'qid 0 docno -1' (grade -1: in the "
        "pool, not judged yet); each run's contribution and unique documents go to standard error.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (qid Q0 docno rank score tag), plain or gzip")
    p.add_argument("-k", "--depth", type=positive_int64, required=True, help="documents per query taken from each run")
    p.add_argument("-o", "--output", action=StoreOnce, default="-", help="pool file to write (.gz: gzip; default: standard output)")
    p.add_argument("--dedup", choices=["error", "max", "first"], default="error", help="what to do with a document retrieved twice for a query")
    p.set_defaults(func=run_pool)


def run_pool(args: argparse.Namespace) -> int:
    check_stdin_once(args.runs)
    if args.output != "-":
        check_output_path(args.output, "-o")
    from gpukit.data.run import Run
    from gpukit.pooling import pool

    result = pool([Run.from_trec(path, dedup=args.dedup) for path in args.runs], depth=args.depth)
    result.save(args.output)
    sys.stderr.write(result.summary() + "\n")
    return 0
