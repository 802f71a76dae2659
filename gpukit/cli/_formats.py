"""How the commands that evaluate several runs print their reports (shared by ``eval`` and ``diversity``)."""
from __future__ import annotations

import argparse
import json
from typing import IO, TYPE_CHECKING, Sequence

from gpukit.errors import UsageError

if TYPE_CHECKING:  # annotations only: `gpukit eval` registers its options before torch is imported
    from gpukit.report import Report

#: The formats every multi-run command accepts; a command may add its own (``eval``'s ``trec``).
REPORT_FORMATS = ("table", "json", "jsonl", "markdown", "latex")
FORMAT_HELP = ("json: one JSON array, an object per run; jsonl: one object per line (JSON Lines); "
               "markdown, latex: one table, a row per run and a column per measure")


def add_format_option(parser: argparse.ArgumentParser, extra: Sequence[str] = ()) -> None:
    parser.add_argument("--format", choices=[*REPORT_FORMATS, *extra], default="table", help=FORMAT_HELP)


def write_reports(out: IO[str], reports: Sequence[Report], fmt: str, per_query: bool) -> None:
    """Write ``reports`` in one of :data:`REPORT_FORMATS`.

    ``markdown`` and ``latex`` put every run in one table (a row each; see
    :mod:`gpukit.report_markup`), with ``per_query`` a table per run after it.

    ``json`` is one document for any number of runs (a parser reads it whole),
    ``jsonl`` one object per line; a mean over no query is ``null`` in both
    (``allow_nan=False`` would refuse a NaN that slipped through: never
    invalid JSON).
    """
    if fmt == "json":
        out.write(json.dumps([r.to_dict(per_query=per_query) for r in reports], indent=2, allow_nan=False) + "\n")
    elif fmt == "jsonl":
        for report in reports:
            out.write(json.dumps(report.to_dict(per_query=per_query), allow_nan=False) + "\n")
    elif fmt == "table":
        out.write("\n\n".join(r.to_table(per_query=per_query) for r in reports) + "\n")
    elif fmt in ("markdown", "latex"):
        from gpukit.report_markup import reports_latex, reports_markdown

        out.write((reports_markdown if fmt == "markdown" else reports_latex)(reports, per_query) + "\n")
    else:
        raise UsageError(f"unknown report format {fmt!r}; expected one of {REPORT_FORMATS}")
