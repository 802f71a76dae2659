"""Throughput of HostStreamedIndex (vectors in a memory-mapped host file) against the in-memory ExactIndex.

    python bench/bench_streamed_index.py [--docs 300000] [--dim 384] [--queries 256] [--k 100] [--device cpu]

Random Gaussian vectors rounded to fp16, inner product, top k. Four
searches of the same queries, interleaved, ``--repeats`` times each after one
warm-up (so the file is in the page cache: a warm-cache figure):

* ``in_memory``: ``ExactIndex(dtype="fp16")`` holding the vectors, default budget;
* ``in_memory_same_blocks``: the same with the streamed index's block sizes;
* ``streamed_overlap``: ``HostStreamedIndex(overlap=True)`` on the ``.npy``
  file within ``--budget`` bytes (blocks planned for two in flight); on the
  CPU the prefetcher runs with real synchronous copies (two per block);
* ``streamed_sync``: ``HostStreamedIndex(overlap=False)`` with the same
  blocks (the CPU default, and the path before the prefetcher).

Prints one JSON line: median seconds and queries/s of each, the ratios of
the medians against ``in_memory``, the median of the per-round ratios
``streamed_overlap / streamed_sync`` (paired: the two ran back to back in
each round), the corpus bytes streamed per second, and whether each
streamed result equals the same-blocks one bit for bit (scores and positions).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's gpukit first

import torch  # noqa: E402

from gpukit.index import ExactIndex  # noqa: E402
from gpukit.index.streamed import HostStreamedIndex, write_vectors  # noqa: E402


def _timed(search, device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    began = time.perf_counter()
    search()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--budget", type=int, default=64 * 2**20, help="the streamed index's device bytes per search")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    corpus = torch.randn(args.docs, args.dim, generator=g)
    queries = torch.randn(args.queries, args.dim, generator=g).to(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.npy")
        write_vectors(path, corpus, "fp16")
        streamed = HostStreamedIndex(path, dtype="fp16", device=device, max_memory=args.budget, overlap=True)
        streamed.search(queries, args.k)  # plans the blocks, warms the page cache
        plan = streamed.last_plan
        blocks = {"chunk_size": plan.corpus_chunk, "query_batch_size": plan.query_batch}
        synchronous = HostStreamedIndex(path, dtype="fp16", device=device, max_memory=args.budget, overlap=False, **blocks)
        in_memory = ExactIndex(args.dim, dtype="fp16", device=device)
        in_memory.add(corpus)
        same_blocks = ExactIndex(args.dim, dtype="fp16", device=device, **blocks)
        same_blocks.add(corpus)
        del corpus
        searches = {
            "in_memory": lambda: in_memory.search(queries, args.k),
            "in_memory_same_blocks": lambda: same_blocks.search(queries, args.k),
            "streamed_overlap": lambda: streamed.search(queries, args.k),
            "streamed_sync": lambda: synchronous.search(queries, args.k),
        }
        ref = searches["in_memory_same_blocks"]()
        equal = {}
        for name in ("streamed_overlap", "streamed_sync"):
            got = searches[name]()
            equal[name] = bool(torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1]))
        for search in searches.values():
            search()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in searches}
        for _ in range(args.repeats):
            for name, search in searches.items():
                times[name].append(_timed(search, device))
        file_bytes = os.path.getsize(path)
    medians = {name: statistics.median(t) for name, t in times.items()}
    paired = statistics.median(a / b for a, b in zip(times["streamed_overlap"], times["streamed_sync"]))
    print(json.dumps({
        "docs": args.docs, "dim": args.dim, "queries": args.queries, "k": args.k, "device": str(device),
        "threads": torch.get_num_threads(), "budget_bytes": args.budget,
        "streamed_blocks": {"corpus_chunk": plan.corpus_chunk, "query_batch": plan.query_batch},
        "streamed_device_bytes": {"overlap": streamed.device_bytes(args.queries, args.k),
                                  "sync": synchronous.device_bytes(args.queries, args.k)},
        "median_s": medians,
        "queries_per_s": {name: args.queries / s for name, s in medians.items()},
        "ratio_vs_in_memory": {name: s / medians["in_memory"] for name, s in medians.items()},
        "paired_ratio_overlap_vs_sync": paired,
        "corpus_gb_per_s": {name: file_bytes / s / 1e9 for name, s in medians.items()},
        "streamed_equals_same_blocks": equal,
    }))

if __name__ == "__main__":
    main()
