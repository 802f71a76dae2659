"""``trec_eval argv...`` end to end: options, measures, inputs, evaluation, output; trec_eval's exit codes."""
from __future__ import annotations

import sys
from typing import IO, Sequence

from gpukit.errors import TrecEvalError
from gpukit.families import name_index
from gpukit.trec_eval.evaluation import evaluate_other_format, evaluate_qrels
from gpukit.trec_eval.inputs import read_inputs, read_zscores
from gpukit.trec_eval.measure_names import REL_INFO_FORMATS, init_outputs, mark_measures
from gpukit.trec_eval.options import HELP, TREC_EVAL_VERSION, Options, parse_options
from gpukit.trec_eval.output_lines import format_lines

def _help(opts: Options, out: IO[str]) -> None:
    out.write(HELP.format(version=TREC_EVAL_VERSION) + "\n-----------------------\n")
    out.write("Individual measure documentation for requested measures\n")
    index = name_index()
    try:
        roots = mark_measures(opts.measures).roots if opts.measures else ()
    except TrecEvalError:
        roots = ()
    for root in roots:
        if root == "runid":
            text = "Runid given by results input file (the tag of its last line)."
        elif root == "relstring":
            text = "The relevance values of the first N (default 10) retrieved docs as a string: the digit of " \
                   "grades 0-9, '>' above 9, '-' not in the pool, '.' in the pool but unjudged. Per query only."
        else:
            fam = index.trec[root][0]
            text = f"{fam.summary}: {fam.definition}"
        out.write(f"{root}\n    {text}\n")
    if not roots:
        out.write("-- No measures indicated.\n   Request measure documentation using <-m measure> on command line\n")


def run_trec_eval(argv: Sequence[str], out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """``trec_eval argv...``: print its output on ``out``, its errors on ``err``; the exit code."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        opts = parse_options(argv)
        if opts.version:
            err.write(f"trec_eval version {TREC_EVAL_VERSION} (gpukit)\n")
            return 0
        request = mark_measures(opts.measures)
        if opts.help:
            _help(opts, out)
            return 0
        if opts.rel_info_format not in REL_INFO_FORMATS:
            raise TrecEvalError([f"trec_eval: Illegal rel_format '{opts.rel_info_format}'"], 2)
        if opts.results_format != "trec_results":
            raise TrecEvalError([f"trec_eval: Illegal retrieval results format '{opts.results_format}'"], 2)
        for root in request.skipped:
            err.write(f"gpukit trec_eval: warning: measure '{root}' is not implemented in gpukit; skipped\n")
        if opts.rel_info_format != "qrels":
            outputs = init_outputs(request, opts.relevance_level, opts.num_docs_in_coll)
            ev = evaluate_other_format(opts, outputs)
        else:
            qrels, run, tag = read_inputs(opts)
            zscores = read_zscores(opts.zscores_file) if opts.zscores_file is not None else None
            outputs = init_outputs(request, opts.relevance_level, opts.num_docs_in_coll)
            ev = evaluate_qrels(opts, qrels, run, tag, outputs, zscores)
        lines = format_lines(opts, ev)
        out.write("".join(line + "\n" for line in lines))
        return 0
    except TrecEvalError as exc:
        err.write("".join(line + "\n" for line in exc.lines))
        return exc.exit_code
