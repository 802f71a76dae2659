"""The torch side of ``gpukit eval``: evaluate the runs and print the reports.

:mod:`gpukit.cli.eval_cmd` imports this module only after it has started
parsing the first run on a second thread, so that the parse overlaps the
import of torch.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import torch

from gpukit.cli._formats import write_reports
from gpukit.cli.eval_cmd import DEFAULT_MEASURES
from gpukit.data.run_texts import RunTexts
from gpukit.data.trec_files import read_trec_files
from gpukit.device import resolve_device
from gpukit.evaluation import evaluate
from gpukit.measures import parse_measures


def evaluate_and_write(args: argparse.Namespace, texts: RunTexts) -> int:
    """Evaluate the runs of ``texts`` (started by ``run_eval``) as ``args`` say and print the reports."""
    measures = parse_measures(args.measures or DEFAULT_MEASURES, rel=args.relevance_level)
    device = resolve_device(args.device)
    score_dtype = torch.float32 if args.score_precision == "float32" else torch.float64
    qrels, runs = read_trec_files(args.qrels, texts, dedup=args.dedup)
    reports = []
    for run in runs:
        run = run.to(device)
        reports.append(
            evaluate(
                qrels, run, measures, convention=args.convention, complete=args.complete,
                max_depth=args.max_depth, score_dtype=score_dtype,
            )
        )
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
        out.write("\n".join(r.to_trec(per_query=args.per_query, rel=rel) for r in tagged) + "\n")
    else:
        write_reports(out, reports, args.format, args.per_query)
    return 0
