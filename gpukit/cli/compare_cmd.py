"""``gpukit compare QRELS RUN1 RUN2 ... -m MEASURE --test ...``

Evaluates every run against one qrels file and tests each system against the
baseline (the first run unless ``--baseline``), or with ``--all-pairs tukey``
every pair of systems at once; see ``docs/statistics.md``.
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
    bounded_int,
    check_output_path,
    grade,
    seed,
)
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.errors import UsageError
from gpukit.io.spooled_input import check_stdin_once
from gpukit.judgments.qrels import Qrels
from gpukit.stats import TESTS, compare, plot_differences
from gpukit.stats._common import StatsError
from gpukit.stats.compare import ComparisonSettings
from gpukit.stats.tukey import compare_all_pairs

#: Options of comparisons with a baseline and their defaults (None in the parser: "not given").
BASELINE_OPTIONS = {"test": "randomization", "n_resamples": 10000, "seed": 0, "correction": "holm",
                    "confidence": 0.95, "risk_alpha": 1.0, "baseline": None, "winners": None, "plot": None}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help=COMMAND_HELP["compare"],
        description="Evaluate runs against one qrels file and compare each with a baseline: "
        "mean difference, p-value (raw and corrected), bootstrap CI, effect size, "
        "wins/ties/losses, URisk/TRisk; or, with --all-pairs tukey, every pair with Tukey's HSD "
        "(mean difference, adjusted p-value, simultaneous CI, reject).",
    )
    p.add_argument("qrels", help="TREC qrels file (qid iter docno grade)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files; at least two")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE", required=True,
                   help="measure name, e.g. nDCG@10, AP, P@10 (repeatable)")
    p.add_argument("--all-pairs", choices=["tukey"], metavar="tukey",
                   help="compare every pair of runs instead of each with a baseline: Tukey's HSD "
                   "(statsmodels pairwise_tukeyhsd; one-way ANOVA, query pairing ignored)")
    # Options of comparisons with a baseline default to None so that --all-pairs can refuse them when given.
    p.add_argument("--test", choices=TESTS, help="significance test against the baseline (default randomization)")
    p.add_argument("--n-resamples", type=int, help="randomization / bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=seed, help="seed of the resampling stream (default 0)")
    p.add_argument("--correction", choices=["holm", "bonferroni", "none"],
                   help="multiple-testing correction per measure (default holm)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--confidence", type=float, help="bootstrap CI level (default 0.95)")
    p.add_argument("--risk-alpha", type=float, help="loss penalty alpha of URisk/TRisk (default 1)")
    p.add_argument("--baseline", metavar="NAME",
                   help="baseline run: its file name (or path as given); default the first run")
    p.add_argument("--winners", type=bounded_int(1, 10**6), metavar="N",
                   help="also list, per system and measure, the N largest per-query gains and losses "
                   "against the baseline with their query ids, and wins/ties/losses")
    p.add_argument("--format", choices=["table", "json", "markdown", "latex"], default="table")
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


def _baseline_defaults(args: argparse.Namespace) -> None:
    """Fill in the baseline options' defaults; with ``--all-pairs`` refuse any that was given."""
    given = [name for name in BASELINE_OPTIONS if getattr(args, name) is not None]
    if args.all_pairs and given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"--all-pairs {args.all_pairs} compares every pair of runs; {options} "
                         "only apply to comparisons with a baseline")
    for name, default in BASELINE_OPTIONS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def run_compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise StatsError("compare needs at least two runs")
    _baseline_defaults(args)
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
    if args.all_pairs:
        tables = [compare_all_pairs(qrels, runs, args.measures, alpha=args.alpha, device=device,
                                    relevance_level=args.relevance_level)]
    else:
        table = compare(
            qrels, runs, args.measures, baseline=baseline, test=args.test, n_resamples=args.n_resamples,
            seed=args.seed, correction=correction, alpha=args.alpha,
            device=device, confidence=args.confidence, risk_alpha=args.risk_alpha,
            relevance_level=args.relevance_level,
        )
        tables = [table] + ([table.winners_losers(args.winners)] if args.winners else [])
    _write(tables, args.format)
    if args.plot:
        plot_differences(tables[0], args.plot)
    return 0


def _write(tables: list, fmt: str) -> None:
    """The comparison (and the winners/losers table after it) in ``fmt``; json: one object,
    the winners/losers under ``"winners_losers"``."""
    if fmt == "json":
        data = tables[0].to_dict()
        if len(tables) > 1:
            data["winners_losers"] = tables[1].to_dict()
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    method = {"latex": "to_latex", "markdown": "to_markdown", "table": "to_text"}[fmt]
    sys.stdout.write("\n\n".join(getattr(t, method)() for t in tables) + "\n")
