"""``gpukit qrels-diff OLD NEW [--run RUN -m MEASURE ...]``: changing judgments (see gpukit.qrels_diff)."""
from __future__ import annotations

import argparse
import json
import sys

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option, grade, positive_int64
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.judgments.qrels import Qrels
from gpukit.measures import parse_measures
from gpukit.qrels_diff import qrels_diff

DEFAULT_MEASURES = ["nDCG@10", "AP", "P@10", "R@100"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "qrels-diff",
        help=COMMAND_HELP["qrels-diff"],
        description="List the judgments added, removed and regraded between two qrels files; with --run, "
        "evaluate that run against both and report each measure's old and new mean and per-query change, "
        "so that a score change can be told apart from a system change.",
    )
    p.add_argument("old", metavar="OLD", help="TREC qrels, the earlier version")
    p.add_argument("new", metavar="NEW", help="TREC qrels, the later version")
    p.add_argument("-r", "--run", action=StoreOnce, help="TREC run to evaluate against both versions")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help=f"measure name (repeatable; with --run; default: {' '.join(DEFAULT_MEASURES)})")
    p.add_argument("-l", "--relevance-level", type=grade, default=None, help="grade counted as relevant by binary measures (default 1)")
    p.add_argument("--convention", choices=["gpukit", "trec_eval"], default="gpukit")
    p.add_argument("-c", "--complete", action="store_true", default=None, help="score qrels topics missing from the run as 0 (trec_eval -c)")
    p.add_argument("-M", "--max-depth", type=positive_int64, default=None, help="only the top N documents of each ranking count")
    p.add_argument("-q", "--per-query", action="store_true", help="also list every changed judgment and per-query change")
    p.add_argument("--format", choices=["table", "json"], default="table")
    add_device_option(p)
    p.set_defaults(func=run_qrels_diff)


def run_qrels_diff(args: argparse.Namespace) -> int:
    measures = parse_measures(args.measures or DEFAULT_MEASURES, rel=args.relevance_level)  # checked before reading
    device = resolve_device(args.device)
    old, new = Qrels.from_trec(args.old), Qrels.from_trec(args.new)
    run = None if args.run is None else Run.from_trec(args.run).to(device)
    diff = qrels_diff(
        old, new, run, measures, convention=args.convention, complete=args.complete, max_depth=args.max_depth,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(diff.to_dict(per_query=args.per_query)) + "\n")
    else:
        sys.stdout.write(diff.to_text(per_query=args.per_query) + "\n")
    return 0
