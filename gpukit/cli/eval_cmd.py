"""``gpukit eval QRELS RUN [RUN ...] -m MEASURE ...``"""
from __future__ import annotations

import argparse

# Nothing imported here imports torch: run_eval starts parsing the first run
# before it imports torch and the evaluation (see run_eval).
from gpukit.cli._formats import add_format_option
from gpukit.cli._options import device_name, grade, positive_int64
from gpukit.cli import COMMAND_HELP, late_imports_done, running_as_program
from gpukit.data.arrow_numpy import arrow_threads
from gpukit.data.run_texts import RunTexts
from gpukit.data.text_table import check_stdin_once
from gpukit.host_memory import keep_freed_memory, no_huge_page_advice

DEFAULT_MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help=COMMAND_HELP["eval"],
        description="Evaluate one or more TREC runs against one qrels file (parsed once).",
    )
    p.add_argument("qrels", help="TREC qrels file (qid iter docno grade), plain or .gz")
    p.add_argument("runs", nargs="+", help="TREC run files (qid Q0 docno rank score tag)")
    p.add_argument(
        "-m", "--measure", action="append", dest="measures", metavar="MEASURE",
        help="measure name: nDCG@10, P(rel=2)@5, AP, RR@10, ... or trec_eval/ranx aliases "
        f"(repeatable; default: {' '.join(DEFAULT_MEASURES)})",
    )
    p.add_argument("-l", "--relevance-level", type=grade, default=None, help="grade counted as relevant by binary measures (default 1)")
    p.add_argument("--convention", choices=["gpukit", "trec_eval"], default="gpukit")
    p.add_argument("-c", "--complete", action="store_true", default=None, help="score qrels topics missing from the run as 0 (trec_eval -c)")
    p.add_argument("-M", "--max-depth", type=positive_int64, default=None, help="only the top N documents of each ranking count (trec_eval -M)")
    p.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    add_format_option(p, extra=("trec",))
    p.add_argument("--device", type=device_name, default="cpu", help="auto, cpu or cuda[:n] (default cpu)")
    p.add_argument("--score-precision", choices=["float64", "float32"], default="float64", help="precision in which scores are compared when sorting")
    p.add_argument("--dedup", choices=["error", "max", "first"], default="error", help="what to do with a document retrieved twice for a query")
    p.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    check_stdin_once([args.qrels, *args.runs])
    if running_as_program(args):
        # Process-wide allocation settings (gpukit.host_memory): in a program only, before any thread starts.
        keep_freed_memory()
        no_huge_page_advice()
    # The first run's text is parsed on a second thread while this one imports
    # torch (about a second, on one core), whatever the file's size; then
    # each next run's while one is evaluated (gpukit.data.run_texts).
    with RunTexts(args.runs, first_any_size=True) as texts:
        # Meanwhile Arrow parses on one thread: a wider parse slows the import
        # (page faults and mappings of both serialise in the kernel) by more
        # than it gains (docs/benchmarks.md, "Seventh pass").
        with arrow_threads(1 if texts.reading_ahead else None):
            from gpukit.cli._eval_reports import evaluate_and_write
        late_imports_done(args)
        return evaluate_and_write(args, texts)
