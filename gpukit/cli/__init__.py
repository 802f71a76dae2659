"""Command-line entry point: ``gpukit <command> ...``.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds a parser whose ``func`` default takes the parsed namespace and
returns an exit code. This keeps the dispatcher ignorant of any command's
internals.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from gpukit.errors import GpukitError

# Module names under gpukit.cli; each defines register(subparsers).
COMMAND_MODULES: tuple[str, ...] = (
    "eval_cmd",
    "search_cmd",
    "compare_cmd",
    "bench_cmd",
    "demo_cmd",
    "measures_cmd",
    "trec_eval_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpukit",
        description="Retrieval evaluation at GPU speed.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"gpukit.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GpukitError as exc:
        print(f"gpukit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
