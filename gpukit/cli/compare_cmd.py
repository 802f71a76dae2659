"""``gpukit compare QRELS RUN1 RUN2 ... -m MEASURE --test ...``

Evaluates every run against one qrels file and tests each system against the
baseline (the first run unless ``--baseline``); see ``docs/statistics.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import (
    StoreOnce,
    add_device_option,
    check_output_path,
    grade,
    seed,
)
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.io.spooled_input import check_stdin_once
from gpukit.judgments.qrels import Qrels
from gpukit.stats import TESTS, compare, plot_differences
from gpukit.stats._common import StatsError
from gpukit.stats.compare import ComparisonSettings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help=COMMAND_HELP["compare"],
        description="Evaluate runs against one qrels file and compare each with a baseline: "
        "mean difference, p-value (raw and corrected), bootstrap CI, effect size, "
        "wins/ties/losses, URisk/TRisk.",
    )
    p.add_argument("qrels", help="TREC qrels file (qid iter docno grade)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files; at least two")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE", required=True,
                   help="measure name, e.g. nDCG@10, AP, P@10 (repeatable)")
    p.add_argument("--test", choices=TESTS, default="randomization", help="significance test (default randomization)")
    p.add_argument("--n-resamples", type=int, default=10000,
                   help="randomization / bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the resampling stream (default 0)")
    p.add_argument("--correction", choices=["holm", "bonferroni", "none"], default="holm",
                   help="multiple-testing correction per measure (default holm)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--confidence", type=float, default=0.95, help="bootstrap CI level (default 0.95)")
    p.add_argument("--risk-alpha", type=float, default=1.0, help="loss penalty alpha of URisk/TRisk (default 1)")
    p.add_argument("--baseline", metavar="NAME",
                   help="baseline run: its file name (or path as given); default the first run")
    p.add_argument("--format", choices=["table", "json", "latex"], default="table")
    p.add_argument("--plot", action=StoreOnce, metavar="FILE", help="write a PNG of sorted per-query differences")
    add_device_option(p)
    p.add_argument("-l", "--relevance-level", type=grade, default=None,
                   help="grade counted as relevant by binary measures (default 1)")
    p.set_defaults(func=run_compare)


def _system_names(paths: list[str]) -> list[str]:
    """File names identify systems; fall back to the paths as given when names collide."""
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) == len(names):
        return names
    if len(set(paths)) != len(paths):
        raise StatsError("the same run file is given twice")
    return list(paths)


def run_compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise StatsError("compare needs at least two runs")
    check_stdin_once([args.qrels, *args.runs])
    names = _system_names(args.runs)
    baseline = args.baseline
    if baseline is not None and baseline not in names:
        by_path = dict(zip(args.runs, names))
        if baseline not in by_path:
            raise StatsError(f"--baseline {baseline!r} matches none of the runs: {', '.join(names)}")
        baseline = by_path[baseline]
    correction = None if args.correction == "none" else args.correction
    # Every option is checked before the (possibly large) files are read.
    ComparisonSettings(baseline, args.test, args.n_resamples, args.seed, correction, args.alpha, args.confidence, args.risk_alpha)
    check_output_path(args.plot, "--plot")
    device = resolve_device(args.device)
    qrels = Qrels.from_trec(args.qrels)
    runs = {name: Run.from_trec(path, name=name) for name, path in zip(names, args.runs)}
    table = compare(
        qrels, runs, args.measures, baseline=baseline, test=args.test, n_resamples=args.n_resamples,
        seed=args.seed, correction=correction, alpha=args.alpha,
        device=device, confidence=args.confidence, risk_alpha=args.risk_alpha,
        relevance_level=args.relevance_level,
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(table.to_dict(), indent=2) + "\n")
    elif args.format == "latex":
        sys.stdout.write(table.to_latex() + "\n")
    else:
        sys.stdout.write(table.to_text() + "\n")
    if args.plot:
        plot_differences(table, args.plot)
    return 0
