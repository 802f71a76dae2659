"""``gpukit trec_eval [trec_eval options] rel_info_file results_file``

trec_eval 10.0's command line, options and output bytes; the logic lives in
:mod:`gpukit.trec_eval`. Arguments are passed through untouched (the
sub-parser takes none of its own, not even ``-h``: that is trec_eval's help).
"""
from __future__ import annotations

import argparse

from gpukit.cli import COMMAND_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "trec_eval",
        help=COMMAND_HELP["trec_eval"],
        description="Run trec_eval's command line on gpukit: same options, same output bytes, same exit codes.",
        add_help=False,
        prefix_chars="\0",  # every argument, -h included, belongs to trec_eval
    )
    p.add_argument("args", nargs=argparse.REMAINDER, help="trec_eval's arguments")
    p.set_defaults(func=run_trec_eval_cmd)


def run_trec_eval_cmd(args: argparse.Namespace) -> int:
    from gpukit.trec_eval import run_trec_eval

    return run_trec_eval(args.args)
