"""``gpukit diversity QRELS RUN [RUN ...] -m MEASURE ...``: ndeval's measures against subtopic qrels
(``gpukit eval`` takes the same files when every measure asked is a diversity measure)."""
from __future__ import annotations

import argparse
import sys

import torch

from gpukit.cli import COMMAND_HELP
from gpukit.cli._formats import add_format_option, write_reports
from gpukit.cli._options import add_device_option, grade, positive_int64
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.evaluation import evaluate
from gpukit.families.diversity import NDEVAL_MEASURES
from gpukit.io.spooled_input import check_stdin_once
from gpukit.judgments import check_kind
from gpukit.judgments.subtopics import SubtopicQrels
from gpukit.measures import parse_measures


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diversity",
        help=COMMAND_HELP["diversity"],
        description="Evaluate TREC runs against diversity qrels (qid subtopic docno grade) with ndeval's "
        "intent-aware measures. Ties are broken by docno descending (ndeval -traditional).",
    )
    p.add_argument("qrels", help="diversity qrels file (qid subtopic docno grade), plain or .gz")
    p.add_argument("runs", nargs="+", help="TREC run files (qid Q0 docno rank score tag)")
    p.add_argument(
        "-m", "--measure", action="append", dest="measures", metavar="MEASURE",
        help="alpha_nDCG@20, ERR_IA(alpha=0.7)@10, NRBP, nNRBP(beta=0.8), P_IA@5, AP_IA, StRecall@10, ndeval's "
        "spellings (alpha-nDCG@20, MAP-IA, strec@10) or 'ndeval' (repeatable; default: ndeval's 21 measures)",
    )
    p.add_argument("-l", "--relevance-level", type=grade, default=None, help="grade counted as relevant (default 1)")
    p.add_argument("--convention", choices=["gpukit", "trec_eval"], default="gpukit",
                   help="trec_eval: ndeval's numbers (a query without relevant subtopics scores 0)")
    p.add_argument("-c", "--complete", action="store_true", default=None,
                   help="score judged topics missing from the run as 0 (ndeval -c)")
    p.add_argument("-M", "--max-depth", type=positive_int64, default=None,
                   help="only the top N documents of each ranking count (ndeval -M)")
    p.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    add_format_option(p)
    add_device_option(p)
    p.set_defaults(func=run_diversity)


def run_diversity(args: argparse.Namespace) -> int:
    check_stdin_once([args.qrels, *args.runs])
    names = [n for m in (args.measures or ["ndeval"]) for n in (NDEVAL_MEASURES if m == "ndeval" else [m])]
    measures = parse_measures(names, rel=args.relevance_level)
    check_kind(measures, "subtopics")  # before any file is read
    device = resolve_device(args.device)
    qrels = SubtopicQrels.from_trec(args.qrels)
    reports = [
        evaluate(qrels, Run.from_trec(path).to(device), measures, convention=args.convention,
                 complete=args.complete, max_depth=args.max_depth, score_dtype=torch.float64)
        for path in args.runs
    ]
    write_reports(sys.stdout, reports, args.format, args.per_query)
    return 0
