"""``gpukit measures``: every measure family with its parameters and definition."""
from __future__ import annotations

import argparse
import sys

from gpukit.cli import COMMAND_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "measures",
        help=COMMAND_HELP["measures"],
        description="List every measure family gpukit computes: names, parameters with defaults, "
        "definition, when it is defined, how it aggregates, and its trec_eval/ranx names.",
    )
    p.add_argument("--markdown", action="store_true", help="print the docs' markdown table instead")
    p.set_defaults(func=run_measures)


def run_measures(args: argparse.Namespace) -> int:
    from gpukit.families.table import markdown_table, text_listing

    sys.stdout.write(markdown_table() + "\n" if args.markdown else text_listing())
    return 0
