"""Command-line entry point: ``gpukit <command> ...``.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds a parser whose ``func`` default takes the parsed namespace and
returns an exit code. This keeps the dispatcher ignorant of any command's
internals.

Only the chosen command's module is imported (the others would pull in
FAISS, statistics, datasets...): the other commands get a bare parser with
their help line from ``COMMAND_HELP``, so ``gpukit --help`` still lists them.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from gpukit.errors import GpukitError

# Module names under gpukit.cli; each defines register(subparsers) for the command "<name>_cmd" minus "_cmd".
COMMAND_MODULES: tuple[str, ...] = (
    "eval_cmd",
    "search_cmd",
    "compare_cmd",
    "bench_cmd",
    "demo_cmd",
    "measures_cmd",
    "trec_eval_cmd",
    "pmrr_cmd",
    "qrels_diff_cmd",
    "diversity_cmd",
    "embed_eval_cmd",
    "fuse_cmd",
    "pool_cmd",
)

#: Commands whose name is not their module's name minus ``_cmd``.
COMMAND_NAMES: dict[str, str] = {"pmrr_cmd": "p-mrr", "qrels_diff_cmd": "qrels-diff", "embed_eval_cmd": "embed-eval"}

#: The help line of each command (used by its module's parser and by the listing).
COMMAND_HELP: dict[str, str] = {
    "eval": "evaluate TREC runs against qrels",
    "search": "exact or FAISS top-k search of embedding files, written as a TREC run",
    "compare": "significance tests of TREC runs against a baseline",
    "bench": "measure an index on five separate cost axes at a stated quality point",
    "demo": "evaluate all-MiniLM-L6-v2 on the bundled BEIR SciFact test set (offline)",
    "measures": "list every measure family, its parameters, defaults and definition",
    "trec_eval": "trec_eval 10.0's command line and output (-q, -c, -M, -l, -m, -J, -Z, -R, -n ...)",
    "p-mrr": "FollowIR p-MRR: do documents made non-relevant by a changed instruction move down?",
    "qrels-diff": "what changed between two qrels versions, and what it does to a run's scores",
    "diversity": "diversity measures against subtopic qrels: alpha_nDCG, ERR_IA, NRBP, ... (ndeval)",
    "embed-eval": "evaluate an embedding model on a BEIR folder, on one process or sharded under torchrun",
    "fuse": "fuse TREC runs (RRF, CombSUM, CombMNZ, weighted sum, ...) into one TREC run",
    "pool": "the depth-k pool of TREC runs, written as qrels to judge, with each run's contribution",
}


def command_name(module: str) -> str:
    """The command a module of ``COMMAND_MODULES`` implements."""
    return COMMAND_NAMES.get(module, module.removesuffix("_cmd"))


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (the first word that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the full sub-parser only for the command in ``argv``
    (``None``: every command's full sub-parser, importing every module)."""
    parser = argparse.ArgumentParser(
        prog="gpukit",
        description="Retrieval evaluation at GPU speed.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    chosen = _chosen_command(argv) if argv is not None else None
    for name in COMMAND_MODULES:
        command = command_name(name)
        if argv is None or command == chosen:
            module = importlib.import_module(f"gpukit.cli.{name}")
            module.register(subparsers)
        else:
            subparsers.add_parser(command, help=COMMAND_HELP.get(command), add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` ``None`` means ``sys.argv``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (GpukitError, OSError, OverflowError) as exc:
        # OSError: a file that cannot be read or written; OverflowError: a number
        # too large for a tensor. Both are bad input: one line, no traceback.
        message = " ".join(str(exc).split("\n"))
        if isinstance(exc, OverflowError):
            message = f"a number in the options or input is too large ({message})"
        print(f"gpukit: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
