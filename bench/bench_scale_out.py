"""Encoding and search throughput of evaluate_embeddings on 1 vs N CPU processes (gloo).

    python bench/bench_scale_out.py --world 1
    python bench/bench_scale_out.py --world 2

Bundled SciFact test split (5,183 documents, 300 queries), the weightless
``HashingEncoder(256)`` (so encoding is a CPU-bound Python loop that
parallelises across processes, as a model's forward pass would across
GPUs), exact inner-product search, top 100, one thread per process. Prints
one JSON line from rank 0: the slowest rank's seconds per stage, documents
per second encoded and queries per second searched. Whole-process timings
(start-up included) come from timing the command itself, e.g. with
``/usr/bin/time -v``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's gpukit first

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def _evaluate() -> dict:
    from gpukit.datasets import load_scifact
    from gpukit.pipelines import evaluate_embeddings
    from gpukit.pipelines.encoders import HashingEncoder

    data = load_scifact()
    result = evaluate_embeddings(HashingEncoder(256), data.corpus, data.queries, data.qrels, ["nDCG@10"], k=100, device="cpu", show_progress=False)
    return {"timings": result.timings, "world": result.world, "documents": result.sizes["documents"], "queries": result.sizes["queries"], "nDCG@10": result.report["nDCG@10"].mean}


def _slowest(timings: dict[str, float]) -> dict[str, float]:
    import torch.distributed as dist

    values = torch.tensor(list(timings.values()), dtype=torch.float64)
    dist.all_reduce(values, op=dist.ReduceOp.MAX)
    return dict(zip(timings, values.tolist()))


def _worker(rank: int, world: int, init_file: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        out = _evaluate()
        out["timings"] = _slowest(out["timings"])
        if rank == 0:
            _print(out)
    finally:
        dist.destroy_process_group()


def _print(out: dict) -> None:
    t = out["timings"]
    out["docs_per_s_encoded"] = out["documents"] / t["encode_corpus"]
    out["queries_per_s_searched"] = out["queries"] / t["search"]
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=1, help="processes (1: no process group)")
    args = parser.parse_args()
    if args.world == 1:
        torch.set_num_threads(1)
        _print(_evaluate())
        return
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(args.world, os.path.join(tmp, "init")), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
