"""Where reading on the calling thread stops beating the threaded reader.

``gpukit.data.text_table.read_table`` parses a file either inline (one
thread, Arrow's threads off) or with the next block read while a worker
thread parses the previous one (Arrow's threads on). For run files of
growing size (synthetic, bench/gen_synthetic.py, 100 docs per query; plain
and gzipped) this times the reader under both strategies, forced by
setting ``SMALL_INPUT_BYTES``, alternating them so that drift in the
machine's speed hits both; it prints the medians of the read alone
(``read_table``, text to Arrow columns, which is all the strategy changes)
and the ratio threaded / inline (above 1: inline is faster).

    python bench/bench_reader_strategy.py --dir /tmp/gk-reader --repeats 9
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

from gen_synthetic import write_synthetic  # noqa: E402

import gpukit.data.text_table as text_table  # noqa: E402
from gpukit.data.run import _TREC_RUN_COLUMNS  # noqa: E402

QUERIES = (20, 100, 300, 1000, 3000, 10000, 30000)  # x 100 lines, ~3.8 KB per query


def time_strategies(path: str, repeats: int) -> dict[str, float]:
    """Median seconds of reading the run file ``path`` inline and threaded."""
    times: dict[str, list[float]] = {"inline": [], "threaded": []}
    saved = text_table.SMALL_INPUT_BYTES
    try:
        for _ in range(repeats + 1):  # the first round warms the page cache and is dropped
            for name, limit in (("inline", 1 << 62), ("threaded", 0)):
                text_table.SMALL_INPUT_BYTES = limit
                t0 = time.perf_counter()
                text_table.read_table(path, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)
                times[name].append(time.perf_counter() - t0)
    finally:
        text_table.SMALL_INPUT_BYTES = saved
    return {name: statistics.median(ts[1:]) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="where the synthetic files go (default: a temporary directory)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--queries", default=",".join(map(str, QUERIES)), help="comma-separated query counts (x 100 lines)")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="gk-reader-")
    print(f"{'file':<34} {'MB':>8} {'inline s':>9} {'threaded s':>11} {'threaded/inline':>16}")
    for n in (int(x) for x in args.queries.split(",")):
        for gz in (False, True):
            _, run_path = write_synthetic(workdir, n, 100, seed=0, gzip_run=gz)
            t = time_strategies(run_path, args.repeats)
            mb = os.path.getsize(run_path) / 1e6
            ratio = t["threaded"] / t["inline"]
            print(f"{os.path.basename(run_path):<34} {mb:8.2f} {t['inline']:9.4f} {t['threaded']:11.4f} {ratio:16.2f}")


if __name__ == "__main__":
    main()
