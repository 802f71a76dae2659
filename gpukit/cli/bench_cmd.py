"""``gpukit bench``: one index on five separate cost axes, at a stated quality point.

Axes (never added together): latency (p50/p95/p99 per batch size),
throughput (queries/s, fraction of the measured roofline), build (train,
add, graph build), memory (index bytes, bytes/vector, peak, on disk) and
infrastructure (device, NVML energy, cost lines from your prices). The
quality point is recall@k against exact float32 search, plus nDCG@10 when
judgments are given (--qrels, or built in with --synthetic).

Examples:
  gpukit bench --synthetic 100000,1000,128 --index exact
  gpukit bench --corpus docs.npy --queries q.npy --qrels qrels.txt \\
      --doc-ids docs.txt --query-ids q.txt --index IVF1024,Flat --nprobe 16
  gpukit bench --synthetic 50000,1000,64 --index IVF256,Flat \\
      --sweep-index HNSW32 --sweep-index exact --pareto-png front.png
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option, check_output_path, seed
from gpukit.cli.search_cmd import load_embeddings, read_ids
from gpukit.device import resolve_device
from gpukit.efficiency import DEFAULT_BATCH_SIZES, Prices, measure_efficiency
from gpukit.efficiency.specs import DTYPES
from gpukit.efficiency.synthetic import parse_shape, synthetic_dataset
from gpukit.errors import GpukitError, InputFormatError
from gpukit.judgments.qrels import Qrels


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers; got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers; got {text!r}")
    return values


def _dtype_list(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in DTYPES]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"dtypes must be among {', '.join(DTYPES)}; got {text!r}")
    return values


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench",
        help=COMMAND_HELP["bench"],
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = p.add_argument_group("data")
    data.add_argument("--synthetic", metavar="N,Q,D", help="clustered synthetic data with one relevant doc per query")
    data.add_argument("--corpus", action=StoreOnce, help="(N, d) corpus embeddings, .npy")
    data.add_argument("--queries", action=StoreOnce, help="(Q, d) query embeddings, .npy")
    data.add_argument("--qrels", action=StoreOnce, help="TREC qrels for nDCG@10 (ids: --doc-ids/--query-ids, default row numbers)")
    data.add_argument("--doc-ids", action=StoreOnce, help="one doc id per line (default: row numbers)")
    data.add_argument("--query-ids", action=StoreOnce, help="one query id per line (default: row numbers)")
    data.add_argument("--seed", type=seed, default=0, help="seed of --synthetic")
    idx = p.add_argument_group("index")
    idx.add_argument("--index", default="exact", help="'exact' or a faiss factory string, e.g. 'IVF1024,Flat', 'HNSW32'")
    idx.add_argument("--metric", choices=("ip", "cosine", "l2"), default="ip")
    idx.add_argument("--dtype", choices=DTYPES, default="fp32", help="storage of the exact index")
    add_device_option(idx)
    idx.add_argument("-k", type=int, default=10, help="results per query; recall@k is measured (default 10)")
    idx.add_argument("--nprobe", type=int, help="IVF lists visited (faiss IVF)")
    idx.add_argument("--ef-search", type=int, help="HNSW search breadth (faiss HNSW)")
    idx.add_argument("--train-size", type=int, help="cap the faiss training sample (first rows)")
    timing = p.add_argument_group("timing")
    timing.add_argument("--batch-sizes", type=_int_list, default=list(DEFAULT_BATCH_SIZES), help="latency batch sizes (default 1,32,256,4096; clipped to Q)")
    timing.add_argument("--repeats", type=int, default=3, help="timed full-query-set searches; qps uses their median")
    timing.add_argument("--warmup", type=int, default=2, help="untimed calls before timing")
    timing.add_argument("--latency-budget", type=float, default=2.0, help="seconds of calls per latency batch size (after 5 calls)")
    timing.add_argument("--no-roofline", action="store_true", help="skip the matmul/bandwidth probe")
    cost = p.add_argument_group("cost (separate lines, never summed)")
    cost.add_argument("--hardware-price-per-hour", type=float, help="price of the hardware per hour")
    cost.add_argument("--power-price-per-kwh", type=float, help="price of electricity per kWh")
    cost.add_argument("--currency", default="USD")
    sweep = p.add_argument_group("sweep / Pareto front")
    sweep.add_argument("--sweep", action="store_true", help="sweep the main index's nprobe / efSearch / dtype")
    sweep.add_argument("--sweep-index", action="append", default=[], metavar="SPEC", help="another index to sweep (repeatable; implies --sweep)")
    sweep.add_argument("--nprobe-grid", type=_int_list, help="nprobe values (default powers of two up to nlist)")
    sweep.add_argument("--ef-grid", type=_int_list, help="efSearch values (default 16..512)")
    sweep.add_argument("--dtype-grid", type=_dtype_list, help="exact-index dtypes (default fp32,fp16,bf16)")
    sweep.add_argument("--pareto-json", help="write the sweep and its front as JSON (implies --sweep)")
    sweep.add_argument("--pareto-png", action=StoreOnce, help="plot the sweep, one curve per index (implies --sweep)")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("table", "json"), default="table")
    out.add_argument("--output", action=StoreOnce, help="also write the JSON report to this file")
    p.set_defaults(func=run_bench)


def _load_data(args: argparse.Namespace) -> dict[str, Any]:
    """Embeddings, ids and qrels from --synthetic or from files."""
    if args.synthetic:
        if args.corpus or args.queries or args.doc_ids or args.query_ids:
            raise GpukitError("--synthetic makes its own embeddings and ids; drop --corpus/--queries/--doc-ids/--query-ids")
        n, q, d = parse_shape(args.synthetic)
        data = synthetic_dataset(n, q, d, seed=args.seed)
        return {
            "corpus": data.corpus,
            "queries": data.queries,
            "qrels": data.qrels if args.qrels is None else Qrels.from_trec(args.qrels),
            "doc_ids": data.doc_ids,
            "query_ids": data.query_ids,
            "description": f"synthetic clustered N={n} Q={q} D={d} seed={args.seed}",
        }
    if not (args.corpus and args.queries):
        raise GpukitError("give --synthetic N,Q,D or both --corpus and --queries (.npy)")
    corpus = load_embeddings(args.corpus)
    queries = load_embeddings(args.queries)
    if corpus.shape[1] != queries.shape[1]:
        raise InputFormatError(args.queries, None, f"dimension {queries.shape[1]} differs from the corpus dimension {corpus.shape[1]}")
    return {
        "corpus": corpus,
        "queries": queries,
        "qrels": Qrels.from_trec(args.qrels) if args.qrels else None,
        "doc_ids": read_ids(args.doc_ids, corpus.shape[0]),
        "query_ids": read_ids(args.query_ids, queries.shape[0]),
        "description": f"corpus {args.corpus}, queries {args.queries}" + (f", qrels {args.qrels}" if args.qrels else ""),
    }


def run_bench(args: argparse.Namespace) -> int:
    """Load data, measure, print the report; returns the exit code."""
    if args.k < 1 or args.repeats < 1 or args.warmup < 0 or args.latency_budget < 0:
        raise GpukitError("-k and --repeats must be >= 1; --warmup and --latency-budget >= 0")
    # Fail on an unavailable device or unwritable output before loading or generating data.
    resolve_device(args.device)
    for path, option in ((args.output, "--output"), (args.pareto_json, "--pareto-json"), (args.pareto_png, "--pareto-png")):
        check_output_path(path, option)
    data = _load_data(args)
    grids = {
        name: values
        for name, values in (("nprobe", args.nprobe_grid), ("efSearch", args.ef_grid), ("dtype", args.dtype_grid))
        if values
    }
    wants_sweep = args.sweep or args.sweep_index or args.pareto_json or args.pareto_png or grids
    try:
        prices = Prices(args.hardware_price_per_hour, args.power_price_per_kwh, args.currency)
    except ValueError as exc:
        raise GpukitError(str(exc)) from None
    report = measure_efficiency(
        data["corpus"],
        data["queries"],
        args.index,
        k=args.k,
        metric=args.metric,
        dtype=args.dtype,
        device=args.device,
        search_params={"nprobe": args.nprobe, "efSearch": args.ef_search},
        qrels=data["qrels"],
        query_ids=data["query_ids"],
        doc_ids=data["doc_ids"],
        batch_sizes=args.batch_sizes,
        repeats=args.repeats,
        warmup=args.warmup,
        latency_budget_s=args.latency_budget,
        prices=prices,
        train_size=args.train_size,
        roofline=not args.no_roofline,
        sweep_specs=list(args.sweep_index) if wants_sweep else None,
        sweep_grids=grids or None,
        pareto_json=args.pareto_json,
        pareto_png=args.pareto_png,
        data_description=data["description"],
    )
    text = report.to_json()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    sys.stdout.write((text if args.format == "json" else report.to_table()) + "\n")
    return 0
