"""``gpukit fuse RUN... -o OUT [--method] [--norm] [--weights]``: rank fusion of TREC runs (see gpukit.fusion)."""
from __future__ import annotations

import argparse
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.errors import UsageError
from gpukit.fusion.methods import METHODS
from gpukit.fusion.normalise import NORMS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fuse",
        help=COMMAND_HELP["fuse"],
        description="Fuse TREC runs into one (ranx's methods and normalisations, as batched tensor ops) "
        "and write it as a TREC run file. Ties in the fused run are ranked by doc id descending, as trec_eval.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (two or more; plain or gzip)")
    p.add_argument("-o", "--output", action=StoreOnce, required=True, metavar="OUT", help="the fused TREC run file to write ('-' for standard output)")
    p.add_argument("--method", default="wsum", help=f"fusion method (default wsum, equal weights, as ranx): {', '.join(METHODS)}")
    p.add_argument("--norm", default="min-max", help=f"score normalisation (default min-max): {', '.join(NORMS)}, none")
    p.add_argument("--weights", type=float, nargs="+", metavar="W", help="one weight per run, for wsum, wmnz, mixed, w_bordafuse")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a numeric method parameter (repeatable): k=60 (rrf), gamma (gmnz), sigma (logn_isr), phi (rbc), w (slidefuse)")
    p.add_argument("--tag", default=None, help="run tag of the written lines (default: fused_<method>)")
    p.add_argument("--depth", type=int, default=None, metavar="N", help="write at most N documents per query")
    add_device_option(p)
    p.set_defaults(func=run_fuse)


def _params(pairs: list[str]) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--param takes NAME=VALUE, got {pair!r}")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--param {name}: {value!r} is not a number") from None
        out[name.strip()] = int(number) if number.is_integer() and name.strip() in ("k", "w") else number
    return out


def run_fuse(args: argparse.Namespace) -> int:
    from gpukit.fusion import fuse

    if args.depth is not None and args.depth < 1:
        raise UsageError(f"--depth must be a positive integer, got {args.depth}")
    device = resolve_device(args.device)
    norm = None if args.norm.strip().lower() == "none" else args.norm
    runs = [Run.from_trec(path).to(device) for path in args.runs]
    fused = fuse(runs, method=args.method, norm=norm, weights=args.weights, params=_params(args.param))
    tag = args.tag or f"fused_{fused.name}"
    _write_trec(fused, args.output, tag, args.depth)
    return 0


def _constant(text: str, n: int) -> pa.Array:
    """``n`` copies of ``text`` as a string column, built by Arrow."""
    return pa.DictionaryArray.from_arrays(np.zeros(n, np.int32), pa.array([text], pa.string())).cast(pa.string())


def _write_trec(run: Run, path: str | os.PathLike, tag: str, depth: int | None = None) -> None:
    """Write ``run`` as ``qid Q0 docid rank score tag`` lines in ranking order.

    Scores are written in the shortest form that reads back as the same
    float64; all columns are formatted by Arrow (no Python loop over lines).
    Ids with whitespace cannot be written to a TREC file: an error."""
    codes = run.doc_codes.cpu().numpy()
    scores = run.scores.cpu().numpy()
    if depth is not None:
        codes, scores = codes[:, :depth], scores[:, :depth]
    valid = codes >= 0
    rows, cols = np.nonzero(valid)  # row-major: each query's documents in rank order
    doc_ids = run.doc_space.ids_of(codes[valid])
    query_ids = run.query_ids.take(pa.array(rows))
    for name, column in (("query", run.query_ids), ("document", doc_ids)):
        if len(column) and pc.any(pc.match_substring_regex(column, r"\s")).as_py():
            raise UsageError(f"a {name} id holds whitespace: it cannot be written to a TREC run file")
    table = pa.table({
        "qid": query_ids,
        "q0": _constant("Q0", len(rows)),
        "docid": doc_ids,
        "rank": pa.array(cols + 1),
        "score": pa.array(scores[valid]).cast(pa.string()),
        "tag": _constant(tag, len(rows)),
    })
    options = pa_csv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    if str(path) == "-":
        import sys

        sink = pa.output_stream(sys.stdout.buffer)
        pa_csv.write_csv(table, sink, options)
        sink.flush()
        return
    pa_csv.write_csv(table, str(path), options)
