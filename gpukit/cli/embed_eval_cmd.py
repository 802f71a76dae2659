"""``gpukit embed-eval``: evaluate an embedding model on a BEIR folder, on one process or under torchrun.

One process::

    gpukit embed-eval --model sentence-transformers/all-MiniLM-L6-v2 --beir DIR

N processes (each encodes its share of the corpus and keeps it in its own
index; queries are encoded once and all-gathered; top-k merged exactly)::

    torchrun --nproc_per_node N -m gpukit.cli embed-eval --model ... --beir DIR

Under torchrun the process group is initialised here: NCCL with one GPU per
rank (``cuda:LOCAL_RANK``) when CUDA is available, else gloo on CPU. Rank 0
prints the report, then one line per stage with the slowest rank's seconds.
``--model hash:DIM`` is a weightless hashed bag-of-words encoder (for
checking a setup); anything else is a sentence-transformers name or path
(``pip install sentence-transformers``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from gpukit.cli import COMMAND_HELP
from gpukit.cli._options import StoreOnce, add_device_option, bounded_int
from gpukit.errors import UsageError

DEFAULT_MEASURES = ["nDCG@10", "R@100", "RR@10", "AP", "P@10"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "embed-eval", help=COMMAND_HELP["embed-eval"], description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", action=StoreOnce, required=True, metavar="NAME_OR_PATH", help="sentence-transformers name or path, or hash:DIM")
    p.add_argument("--beir", action=StoreOnce, required=True, metavar="DIR", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)")
    p.add_argument("--split", default="test", help="qrels split (default test)")
    p.add_argument("--cache", action=StoreOnce, metavar="DIR", help="cache corpus embeddings here, in resumable shards")
    p.add_argument("--cache-dtype", choices=("fp32", "fp16", "bf16"), default="fp32", help="storage dtype of the cache")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE", help=f"repeatable; default {' '.join(DEFAULT_MEASURES)}")
    p.add_argument("-k", type=bounded_int(1, 2**31 - 1), default=100, help="results per query (default 100)")
    p.add_argument("--metric", choices=("cosine", "ip", "l2"), help="similarity (default: the model's)")
    p.add_argument("--batch-size", type=bounded_int(1, 2**31 - 1), default=64, help="texts per encoder batch (default 64)")
    add_device_option(p, extra=", this rank's GPU under torchrun")
    p.add_argument("--drop-self-hits", action="store_true", help="drop a retrieved document whose id is the query id (BEIR option)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run_embed_eval)


def load_model(name: str, device: str) -> Any:
    """``hash:DIM`` or a sentence-transformers model on ``device``."""
    if name.startswith("hash:"):
        from gpukit.pipelines.encoders import HashingEncoder

        dim = name.removeprefix("hash:")
        if not dim.isdigit() or int(dim) < 1:
            raise UsageError(f"--model {name}: expected hash:DIM with a positive integer DIM")
        return HashingEncoder(int(dim))
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise UsageError(f"--model {name}: needs sentence-transformers (pip install sentence-transformers), or use hash:DIM") from None
    try:
        return SentenceTransformer(name, device=device)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--model {name}: cannot load ({exc})") from None


def _start_ranks(device: str | None) -> tuple[str, bool]:
    """Initialise torch.distributed when launched by torchrun; the device for this rank."""
    import torch
    import torch.distributed as dist

    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device is None or device == "auto":
        device = f"cuda:{local}" if torch.cuda.is_available() else "cpu"
    if launched and not dist.is_initialized():
        on_cuda = device.startswith("cuda")
        if on_cuda:
            torch.cuda.set_device(torch.device(device))
        dist.init_process_group("nccl" if on_cuda else "gloo")  # env:// from torchrun
    return device, launched


def _slowest(timings: dict[str, float], device: str) -> dict[str, float]:
    """Each stage's largest time over the ranks (one all_reduce)."""
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        return timings
    values = torch.tensor(list(timings.values()), dtype=torch.float64, device=device)
    dist.all_reduce(values, op=dist.ReduceOp.MAX)
    return dict(zip(timings, values.cpu().tolist()))


def run_embed_eval(args: argparse.Namespace) -> int:
    """Load, evaluate (sharded under torchrun), print on rank 0; returns the exit code."""
    from gpukit.datasets import load_beir
    from gpukit.measures import parse_measures
    from gpukit.pipelines import evaluate_embeddings

    measures = parse_measures(args.measures or DEFAULT_MEASURES)  # before any heavy work
    if args.cache is not None and os.path.exists(args.cache) and not os.path.isdir(args.cache):
        raise UsageError(f"--cache {args.cache}: exists and is not a directory")
    data = load_beir(args.beir, args.split)
    device, launched = _start_ranks(args.device)
    try:
        model = load_model(args.model, device)
        result = evaluate_embeddings(
            model, data.corpus, data.queries, data.qrels, measures, k=args.k,
            metric=args.metric, device=device, batch_size=args.batch_size, show_progress=not args.quiet,
            cache_dir=args.cache, cache_dtype=args.cache_dtype, drop_self_hits=args.drop_self_hits,
            model_name=None if args.model.startswith("hash:") else args.model,
        )
        timings = _slowest(result.timings, device)
        import torch.distributed as dist

        if dist.is_initialized() and dist.get_rank() != 0:
            return 0
        result.timings = timings
        if args.format == "json":
            json.dump(result.to_dict(), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(result.report.to_table() + "\n\n")
            note = f", {result.world} processes (slowest rank's time per stage)" if result.world > 1 else ""
            sys.stdout.write(f"{result.sizes['documents']} documents, {result.sizes['queries']} queries, metric {result.metric}{note}\n")
            sys.stdout.write(result.timings_table() + "\n")
        return 0
    finally:
        if launched:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
