"""``gpukit eval QRELS RUN [RUN ...] -m MEASURE ...``"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from gpukit.cli import COMMAND_HELP
from gpukit.cli._formats import add_format_option, write_reports
from gpukit.cli._options import add_device_option, grade, positive_int64
from gpukit.io.spooled_input import check_stdin_once

DEFAULT_MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help=COMMAND_HELP["eval"],
        description="Evaluate one or more TREC runs against one judgments file (parsed once). The measures "
        "asked say how the file is read: ordinary qrels (qid iter docno grade); subtopic qrels (qid subtopic "
        "docno grade, ndeval's) when every measure is a diversity measure (alpha_nDCG@20, ERR_IA@20, NRBP, "
        "'ndeval'...); trec_eval's prefs (-R prefs) or qrels_jg (-R qrels_jg) files for their measures.",
    )
    p.add_argument("qrels", help="judgments file, plain or .gz: TREC qrels (qid iter docno grade), or the kind the measures read")
    p.add_argument("runs", nargs="+", help="TREC run files (qid Q0 docno rank score tag)")
    p.add_argument(
        "-m", "--measure", action="append", dest="measures", metavar="MEASURE",
        help="measure name: nDCG@10, P(rel=2)@5, AP, RR@10, ... or trec_eval/ranx aliases "
        f"(repeatable; default: {' '.join(DEFAULT_MEASURES)})",
    )
    p.add_argument("-l", "--relevance-level", type=grade, default=None, help="grade counted as relevant by binary measures (default 1)")
    p.add_argument("--convention", choices=["gpukit", "trec_eval"], default=None,
                   help="default gpukit; trec_eval for preference and judgment-group measures")
    p.add_argument("-c", "--complete", action="store_true", default=None, help="score qrels topics missing from the run as 0 (trec_eval -c)")
    p.add_argument("-M", "--max-depth", type=positive_int64, default=None, help="only the top N documents of each ranking count (trec_eval -M)")
    p.add_argument("-J", "--judged-only", action="store_true",
                   help="compute every measure on the judged documents only (trec_eval -J; per measure: -m 'nDCG(judged_only=True)@10')")
    p.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    add_format_option(p, extra=("trec",))
    add_device_option(p)
    p.add_argument("--score-precision", choices=["float64", "float32"], default="float64", help="precision in which scores are compared when sorting")
    p.add_argument("--dedup", choices=["error", "max", "first"], default="error", help="what to do with a document retrieved twice for a query")
    p.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    """Evaluate the runs as ``args`` say and print the reports (the qrels are read once)."""
    check_stdin_once([args.qrels, *args.runs])
    import torch

    from gpukit.device import resolve_device
    from gpukit.evaluation import evaluate
    from gpukit.measures import parse_measures

    measures = parse_measures(_expand(args.measures or DEFAULT_MEASURES), rel=args.relevance_level)
    device = resolve_device(args.device)
    score_dtype = torch.float32 if args.score_precision == "float32" else torch.float64
    judgments, runs = _read(args.qrels, args.runs, measures, args.dedup)
    reports = [
        evaluate(
            judgments, run, measures, device=device, convention=args.convention, complete=args.complete,
            max_depth=args.max_depth, score_dtype=score_dtype, judged_only=args.judged_only,
        )
        for run in runs
    ]
    out = sys.stdout
    if args.format == "trec":
        from gpukit.trec_eval.inputs import run_tag

        # trec_eval's runid is the run file's tag, and -l renames nothing (P_5 at any level).
        # A pipe or stdin was read once already: its report keeps the run's name.
        tagged = [
            dataclasses.replace(r, run_name=run_tag(path)) if os.path.isfile(path) else r
            for r, path in zip(reports, args.runs)
        ]
        rel = 1 if args.relevance_level is None else args.relevance_level
        out.write("\n".join(r.to_trec(per_query=args.per_query, rel=rel, judged_only=args.judged_only) for r in tagged) + "\n")
    else:
        write_reports(out, reports, args.format, args.per_query)
    return 0


def _expand(names: list[str]) -> list[str]:
    """``ndeval`` (ndeval's 21 measures) expanded; other names as given."""
    from gpukit.families.diversity import NDEVAL_MEASURES

    return [n for name in names for n in (NDEVAL_MEASURES if name == "ndeval" else [name])]


def _read(judgments_path: str, run_paths: list[str], measures, dedup: str):
    """The judgments, read as the kind every measure reads, and the runs."""
    from gpukit.data.run import Run
    from gpukit.data.trec_files import read_trec_files
    from gpukit.errors import MeasureError
    from gpukit.judgments import KINDS, kind_needed

    kinds = {m: kind_needed(m) for m in measures}
    if len(set(kinds.values())) > 1:
        by_kind = {}
        for m, kind in kinds.items():
            by_kind.setdefault(kind, []).append(str(m))
        parts = "; ".join(f"{', '.join(ms)} read {KINDS[k].split(' (')[0]}" for k, ms in by_kind.items())
        raise MeasureError(f"the measures read different judgments ({parts}): evaluate each kind in its own command")
    kind = next(iter(kinds.values()), "qrels")
    if kind == "qrels":
        return read_trec_files(judgments_path, run_paths, dedup=dedup)
    from gpukit.judgments import JudgmentGroups, Prefs, SubtopicQrels

    reader = {"subtopics": SubtopicQrels.from_trec, "judgment_groups": JudgmentGroups.from_trec, "prefs": Prefs.from_trec}[kind]
    return reader(judgments_path), (Run.from_trec(path, dedup=dedup) for path in run_paths)
