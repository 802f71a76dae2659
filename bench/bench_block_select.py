"""Exact search's block selection (top-k of one score block): this tree
against another checkout's, interleaved in one process, on the CPU.

Times what ``ExactIndex._scan`` does with one (B, n) score block:

* ``bf16``: the CUDA path's block (the matmul's bf16 output). This tree's
  :func:`gpukit.index.topk.block_topk` selects in the block's dtype; the
  baseline's scan (trees before the change) upcast the block to fp32 first,
  which is what is timed for it;
* ``fp32``: the CPU path's block, both trees' ``block_topk`` as they are.

The baseline is ``gpukit/index/topk.py`` of ``--baseline`` (a checkout of
the previous commit), loaded as a separate module. Runs alternate baseline /
this tree pair by pair, so load changes on a shared machine hit both alike;
the figure to read is the median of the per-pair ratios::

    python bench/bench_block_select.py --baseline /path/to/old/checkout --rows 256 --cols 200000 --k 10 100 1000 --repeat 7

Prints one JSON line: medians (ms) and the median baseline/this ratio per case.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402

from gpukit.index import topk as this  # noqa: E402


def load_baseline(checkout: str):
    path = os.path.join(checkout, "gpukit", "index", "topk.py")
    spec = importlib.util.spec_from_file_location("baseline_topk", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired(old, new, repeat: int) -> dict:
    old(), new()  # warm-up
    pairs = []
    for i in range(repeat):
        # Alternate which goes first, so neither always runs on a warmer cache.
        if i % 2:
            b, a = seconds(new), seconds(old)
        else:
            a, b = seconds(old), seconds(new)
        pairs.append((a, b))
    return {
        "baseline_ms": round(1000 * statistics.median(a for a, _ in pairs), 1),
        "this_ms": round(1000 * statistics.median(b for _, b in pairs), 1),
        "ratio": round(statistics.median(a / b for a, b in pairs), 3),
        "ratio_range": [round(min(a / b for a, b in pairs), 3), round(max(a / b for a, b in pairs), 3)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="checkout whose gpukit/index/topk.py is the baseline")
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--cols", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    old = load_baseline(args.baseline)
    g = torch.Generator().manual_seed(0)
    queries = torch.nn.functional.normalize(torch.randn(args.rows, args.dim, generator=g), dim=1)
    docs = torch.nn.functional.normalize(torch.randn(args.cols, args.dim, generator=g), dim=1)
    fp32_block = queries @ docs.T
    bf16_block = fp32_block.to(torch.bfloat16)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "shape": [args.rows, args.cols]}
    for k in args.k:
        same = torch.equal(this.block_topk(bf16_block, k)[1].sort(1).values,
                           old.block_topk(bf16_block.float(), k)[1].sort(1).values)
        out[f"bf16_k{k}"] = paired(lambda: old.block_topk(bf16_block.float(), k), lambda: this.block_topk(bf16_block, k), args.repeat)
        out[f"bf16_k{k}"]["same_columns"] = same
        out[f"fp32_k{k}"] = paired(lambda: old.block_topk(fp32_block, k), lambda: this.block_topk(fp32_block, k), args.repeat)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
