"""``gpukit p-mrr QRELS_OG RUN_OG QRELS_CHANGED RUN_CHANGED``: FollowIR's p-MRR (see gpukit.pairwise)."""
from __future__ import annotations

import argparse
import json
import sys

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import add_device_option, grade
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.judgments.qrels import Qrels
from gpukit.pairwise import p_mrr


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "p-mrr",
        help=COMMAND_HELP["p-mrr"],
        description="p-MRR (FollowIR, as MTEB computes it) of a run under an original and a changed instruction, "
        "over the documents relevant under the original judgments and not under the changed ones: "
        "> 0 when they move down, < 0 when they move up.",
    )
    p.add_argument("qrels_og", metavar="QRELS_OG", help="TREC qrels under the original instruction")
    p.add_argument("run_og", metavar="RUN_OG", help="TREC run under the original instruction")
    p.add_argument("qrels_changed", metavar="QRELS_CHANGED", help="TREC qrels under the changed instruction")
    p.add_argument("run_changed", metavar="RUN_CHANGED", help="TREC run under the changed instruction (same query ids)")
    p.add_argument("-l", "--relevance-level", type=grade, default=1, help="grade counted as relevant (default 1)")
    p.add_argument("-q", "--per-query", action="store_true", help="also print per-query values and each changed document")
    p.add_argument("--format", choices=["table", "json"], default="table")
    add_device_option(p)
    p.set_defaults(func=run_pmrr)


def run_pmrr(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    result = p_mrr(
        Qrels.from_trec(args.qrels_og), Run.from_trec(args.run_og), Qrels.from_trec(args.qrels_changed),
        Run.from_trec(args.run_changed), rel=args.relevance_level, device=device,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(per_query=args.per_query)) + "\n")
    else:
        sys.stdout.write(result.to_text(per_query=args.per_query) + "\n")
    return 0
