"""Exact search throughput: gpukit ExactIndex (torch) vs faiss Flat, in one run.

On CPU: ExactIndex fp32 against faiss-cpu ``Flat`` on the same data; prints
the ratio of their queries/s (median of ``--repeats`` timed runs after
``--warmup`` untimed ones). On CUDA: ExactIndex in fp32, fp16 and bf16 plus
faiss-gpu ``Flat`` when installed, and a bf16 matmul of the same shape
(``(Q x d) @ (d x N)``) timed in the same run; for ``d >= 384`` and
``Q >= 1024`` it prints the fraction of that matmul rate the bf16 search
reaches (search FLOP/s = ``2 Q N d / seconds``).

Sizes default to N=20000, Q=256, d=128 on CPU and N=1000000, Q=4096, d=768
on CUDA (large enough for the matmul-fraction line).

    python bench/compare_search.py --device cpu --n-docs 20000 --n-queries 256
    python bench/compare_search.py --device cuda --json out.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable

import torch

from gpukit.device import resolve_device
from gpukit.index import ExactIndex, FaissIndex, faiss_has_gpu, recall_at_k

FRACTION_MIN_DIM = 384
FRACTION_MIN_QUERIES = 1024
# (n_docs, n_queries, dim) when the flags are omitted.
DEFAULT_SIZES = {"cpu": (20_000, 256, 128), "cuda": (1_000_000, 4096, 768)}


def median_seconds(fn: Callable[[], object], device: torch.device, repeats: int, warmup: int) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs, synchronising CUDA."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bf16_matmul_tflops(args: argparse.Namespace, device: torch.device) -> float:
    """Measured rate of a bare bf16 ``(Q x d) @ (d x N)`` matmul, TFLOP/s."""
    left = torch.randn(args.n_queries, args.dim, device=device, dtype=torch.bfloat16)
    right = torch.randn(args.dim, args.n_docs, device=device, dtype=torch.bfloat16)
    seconds = median_seconds(lambda: left @ right, device, args.repeats, args.warmup)
    return 2 * args.n_queries * args.n_docs * args.dim / seconds / 1e12


def run(args: argparse.Namespace) -> dict:
    device = resolve_device(args.device)
    defaults = DEFAULT_SIZES[device.type]
    args.n_docs = args.n_docs or defaults[0]
    args.n_queries = args.n_queries or defaults[1]
    args.dim = args.dim or defaults[2]
    # Generated on the device: a CPU-side 1M x 768 corpus would take seconds.
    generator = torch.Generator(device=device).manual_seed(0)
    corpus = torch.randn(args.n_docs, args.dim, generator=generator, device=device)
    queries = torch.randn(args.n_queries, args.dim, generator=generator, device=device)
    systems: dict[str, object] = {}
    dtypes = ("fp32", "fp16", "bf16") if device.type == "cuda" else ("fp32",)
    for dtype in dtypes:
        systems[f"torch-exact-{dtype}"] = ExactIndex(args.dim, metric=args.metric, dtype=dtype, device=device)
    if device.type == "cpu" or faiss_has_gpu():
        systems["faiss-Flat"] = FaissIndex(args.dim, "Flat", metric=args.metric, device=device)
    results = []
    for name, index in systems.items():
        index.add(corpus)
        seconds = median_seconds(lambda: index.search(queries, args.k), device, args.repeats, args.warmup)
        results.append({"system": name, "median_s": seconds, "queries_per_s": args.n_queries / seconds})
    report: dict = {"config": {**vars(args), "device": str(device)}, "results": results}
    # Sanity: the systems must agree before their speeds are compared.
    reference = systems["torch-exact-fp32"].search(queries, args.k)[1]
    for row, index in zip(results, systems.values()):
        row["recall_vs_torch_fp32"] = recall_at_k(index.search(queries, args.k)[1], reference, args.k)
    by_name = {row["system"]: row for row in results}
    if "faiss-Flat" in by_name:
        report["ratio_torch_fp32_over_faiss"] = (
            by_name["torch-exact-fp32"]["queries_per_s"] / by_name["faiss-Flat"]["queries_per_s"]
        )
    if device.type == "cuda":
        report["bf16_matmul_tflops"] = bf16_matmul_tflops(args, device)
        if args.dim >= FRACTION_MIN_DIM and args.n_queries >= FRACTION_MIN_QUERIES:
            flops = 2 * args.n_queries * args.n_docs * args.dim
            search_tflops = flops / by_name["torch-exact-bf16"]["median_s"] / 1e12
            report["bf16_search_fraction_of_matmul"] = search_tflops / report["bf16_matmul_tflops"]
    return report


def print_report(report: dict) -> None:
    config = report["config"]
    print(
        f"device={config['device']} N={config['n_docs']} Q={config['n_queries']} d={config['dim']} "
        f"k={config['k']} metric={config['metric']} (median of {config['repeats']})"
    )
    print(f"{'system':<20} {'median ms':>10} {'queries/s':>12} {'recall':>7}")
    for row in report["results"]:
        print(
            f"{row['system']:<20} {row['median_s'] * 1e3:>10.2f} "
            f"{row['queries_per_s']:>12.0f} {row['recall_vs_torch_fp32']:>7.3f}"
        )
    if "ratio_torch_fp32_over_faiss" in report:
        print(f"ratio torch fp32 / faiss Flat (queries/s): {report['ratio_torch_fp32_over_faiss']:.2f}")
    if "bf16_matmul_tflops" in report:
        print(f"bf16 matmul rate: {report['bf16_matmul_tflops']:.1f} TFLOP/s")
    if "bf16_search_fraction_of_matmul" in report:
        print(f"bf16 search reaches {report['bf16_search_fraction_of_matmul']:.1%} of the matmul rate")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--n-docs", type=int, help="corpus size N (default: see above)")
    parser.add_argument("--n-queries", type=int, help="queries Q (default: see above)")
    parser.add_argument("--dim", type=int, help="dimension d (default: see above)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--metric", choices=("ip", "cosine", "l2"), default="ip")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--threads", type=int, help="CPU threads for both torch and faiss (default: each library's own)"
    )
    parser.add_argument("--json", help="also write the report to this JSON file")
    args = parser.parse_args()
    if args.threads is not None:
        import faiss

        torch.set_num_threads(args.threads)
        faiss.omp_set_num_threads(args.threads)
    report = run(args)
    print_report(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
