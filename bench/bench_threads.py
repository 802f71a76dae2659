"""Where torch's intra-op threads start to pay: one thread against the pool, by work size.

For synthetic tracks of growing size (bench/gen_track.py: topics x depth
ranked entries) this times, in one process, reading a run
(``Run.from_trec``) and evaluating it (``gpukit.evaluate``, six measures,
trec_eval convention: ranking formation plus the kernels) with
``torch.set_num_threads(1)`` and with the pool (``--threads``, default
torch's own count), alternating the two so that drift in the machine's
speed hits both; gpukit's own size rule is switched off
(``gpukit.threads.SMALL_WORK = 0``) so that the count set is the count used.
It prints the medians and the ratio pool / one thread (above 1: one thread
is faster).

    python bench/bench_threads.py --dir /tmp/gk-threads --repeats 9
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]  # this checkout's gpukit, then the generator

import torch  # noqa: E402
from gen_track import write_track  # noqa: E402

import gpukit  # noqa: E402
import gpukit.threads  # noqa: E402
from gpukit.data.qrels import Qrels  # noqa: E402
from gpukit.data.run import Run  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402

MEASURES = parse_measures(["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"])
#: (topics, depth): 10^4 to 2 x 10^6 ranked entries.
SIZES = ((100, 100), (100, 1000), (250, 1000), (500, 1000), (1000, 1000), (2000, 1000))


def time_counts(qrels_path: str, run_path: str, counts: tuple[int, int], repeats: int) -> dict[tuple[int, str], float]:
    """Median seconds of (thread count, "read" | "evaluate")."""
    qrels = Qrels.from_trec(qrels_path)
    times: dict[tuple[int, str], list[float]] = {(n, phase): [] for n in counts for phase in ("read", "evaluate")}
    for _ in range(repeats + 1):  # the first round warms caches and is dropped
        for n in counts:
            torch.set_num_threads(n)
            t0 = time.perf_counter()
            run = Run.from_trec(run_path)
            t1 = time.perf_counter()
            gpukit.evaluate(qrels, run, MEASURES, convention="trec_eval")
            t2 = time.perf_counter()
            times[(n, "read")].append(t1 - t0)
            times[(n, "evaluate")].append(t2 - t1)
    return {key: statistics.median(ts[1:]) for key, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="where the synthetic files go (default: a temporary directory)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help="the pool's size (default: torch's count)")
    ap.add_argument("--sizes", default=",".join(f"{t}x{k}" for t, k in SIZES), help="comma-separated TOPICSxDEPTH")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="gk-threads-")
    gpukit.threads.SMALL_WORK = 0
    pool = args.threads
    print(f"{'topics x depth':<16} {'entries':>9} {'read 1':>8} {f'read {pool}':>8} {'ratio':>6} {'eval 1':>8} {f'eval {pool}':>8} {'ratio':>6}")
    for size in args.sizes.split(","):
        topics, depth = (int(x) for x in size.split("x"))
        qrels_path, (run_path,) = write_track(os.path.join(workdir, f"d{depth}"), topics, 1, depth)
        t = time_counts(qrels_path, run_path, (1, pool), args.repeats)
        print(
            f"{size:<16} {topics * depth:>9} "
            f"{t[(1, 'read')] * 1e3:7.1f}ms {t[(pool, 'read')] * 1e3:7.1f}ms {t[(pool, 'read')] / t[(1, 'read')]:6.2f} "
            f"{t[(1, 'evaluate')] * 1e3:7.1f}ms {t[(pool, 'evaluate')] * 1e3:7.1f}ms {t[(pool, 'evaluate')] / t[(1, 'evaluate')]:6.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
