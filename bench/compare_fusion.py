"""Fusing 10 runs: gpukit.fuse against ranx.fuse, and gpukit's memory peak.

Synthetic runs: ``--runs`` runs of ``--queries`` queries x ``--depth``
documents, each ranking a random subset of a per-collection pool of
``--pool`` doc ids with continuous random scores (no ties, so ranx's
unstable sort and gpukit's order agree and every value can be compared).

* speed: for each method, gpukit and ranx alternate ``--repeats`` times on
  runs already built (gpukit Runs, ranx Runs; building is not timed); the
  medians and the ratio ranx / gpukit are printed, and every fused value of
  the last repeat is compared (to 1e-9);
* memory (``--memory-queries``, gpukit only, in a fresh process): the peak
  resident memory that one fuse adds (VmHWM after, reset before, minus
  VmRSS before) against the bytes of the runs' own (Q, K) tensors.

    python bench/compare_fusion.py                      # 1000 x 1000 x 10 runs vs ranx; memory at 10000 x 1000
    python bench/compare_fusion.py --queries 200 --repeats 3 --memory-queries 0
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # this checkout's gpukit, whatever is installed

import gpukit  # noqa: E402


def make_runs(n_runs: int, queries: int, depth: int, pool: int, seed: int = 0):
    """(gpukit runs, their flat arrays) of ``n_runs`` synthetic runs."""
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.array([f"q{q}" for q in range(queries)]), depth)
    runs, arrays = [], []
    for i in range(n_runs):
        docs = np.argsort(rng.random((queries, pool)), axis=1)[:, :depth]  # distinct per query
        doc_ids = np.char.add("d", docs.reshape(-1).astype(str))
        scores = rng.random(queries * depth)
        runs.append(gpukit.Run.from_arrays(qids, doc_ids, scores, name=f"run{i}"))
        arrays.append((qids, doc_ids, scores))
    return runs, arrays


def ranx_run(arrays):
    from ranx import Run as RanxRun

    qids, doc_ids, scores = arrays
    d: dict[str, dict[str, float]] = {}
    for q, doc, s in zip(qids.tolist(), doc_ids.tolist(), scores.tolist()):
        d.setdefault(q, {})[doc] = s
    return RanxRun(d)


def compare_values(fused: gpukit.Run, expected) -> int:
    got = fused.to_dict()
    want = expected.to_dict()
    assert set(got) == set(want)
    n = 0
    for q, docs in want.items():
        assert docs.keys() == got[q].keys(), q
        for doc, v in docs.items():
            assert abs(got[q][doc] - v) <= 1e-9 * max(1.0, abs(v)), (q, doc, got[q][doc], v)
            n += 1
    return n


def speed(args) -> list[dict]:
    import ranx

    runs, arrays = make_runs(args.runs, args.queries, args.depth, args.pool)
    ranx_runs = [ranx_run(a) for a in arrays]
    rows = []
    for method in args.methods:
        params = {"weights": [1.0 / args.runs] * args.runs} if method == "wsum" else {}
        ranx.fuse(ranx_runs[:2], norm="min-max", method=method, params={"weights": [0.5, 0.5]} if method == "wsum" else {})  # compile
        g_times, r_times = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            fused = gpukit.fuse(runs, method=method, norm="min-max", **params)
            g_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            expected = ranx.fuse(ranx_runs, norm="min-max", method=method, params=params)
            r_times.append(time.perf_counter() - t)
        checked = compare_values(fused, expected)
        g, r = statistics.median(g_times), statistics.median(r_times)
        rows.append({"method": method, "gpukit_s": g, "ranx_s": r, "ratio": r / g, "values_checked": checked})
        print(f"{method:6s} gpukit {g:7.3f} s  ranx {r:7.3f} s  ranx/gpukit {r / g:5.1f}x  ({checked} fused values equal)", flush=True)
    return rows


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def memory_worker(args) -> dict:
    """In this (fresh) process: the resident peak one fuse adds, against the runs' tensors."""
    runs, arrays = make_runs(args.runs, args.memory_queries, args.depth, args.pool)
    del arrays
    tensors = sum(r.doc_codes.element_size() * r.doc_codes.numel() + r.scores.element_size() * r.scores.numel() for r in runs)
    out = {}
    for method in args.methods:
        params = {"weights": [1.0 / args.runs] * args.runs} if method == "wsum" else {}
        before = _status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:  # resets this process's VmHWM to its current RSS
            f.write("5")
        t = time.perf_counter()
        fused = gpukit.fuse(runs, method=method, norm="min-max", **params)
        seconds = time.perf_counter() - t
        peak = _status("VmHWM") - before
        fused_bytes = fused.doc_codes.numel() * 8 * 2
        out[method] = {"seconds": seconds, "peak_added_bytes": peak, "fused_bytes": fused_bytes}
        del fused
    return {"runs_tensor_bytes": tensors, "methods": out}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--pool", type=int, default=3000, help="distinct doc ids a query's documents are drawn from")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--methods", nargs="+", default=["wsum", "rrf", "mnz"])
    p.add_argument("--memory-queries", type=int, default=10000, help="queries of the memory measurement (0: skip)")
    p.add_argument("--memory-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_worker:
        print(json.dumps(memory_worker(args)))
        return
    print(f"{args.runs} runs x {args.queries} queries x {args.depth} docs (pool {args.pool}), {args.repeats} paired repeats, torch threads {__import__('torch').get_num_threads()}")
    if args.repeats:
        speed(args)
    if args.memory_queries:
        cmd = [sys.executable, os.path.abspath(__file__), "--memory-worker", "--runs", str(args.runs), "--depth", str(args.depth),
               "--pool", str(args.pool), "--memory-queries", str(args.memory_queries), "--methods", *args.methods]
        result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        tensors = result["runs_tensor_bytes"]
        print(f"memory at {args.runs} runs x {args.memory_queries} x {args.depth}: runs' tensors {tensors / 2**20:.0f} MiB")
        for method, m in result["methods"].items():
            print(f"{method:6s} gpukit {m['seconds']:7.3f} s  peak added {m['peak_added_bytes'] / 2**20:7.0f} MiB"
                  f" = {m['peak_added_bytes'] / tensors:4.2f}x the runs' tensors (fused run itself {m['fused_bytes'] / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
