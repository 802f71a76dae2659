"""Where each reader strategy stops beating the next one.

``gpukit.data.text_table.read_table`` parses a file either with the tiny
parser (gpukit/data/tiny_table.py: one NumPy pass, no Arrow parser), inline
(Arrow's parser on one thread, Arrow's threads off) or with the next block
read while a worker thread parses the previous one (Arrow's threads on). For
run files of growing size (synthetic, bench/gen_synthetic.py, 100 docs per
query; plain and gzipped) this times the reader under each strategy, forced
by setting ``TINY_INPUT_BYTES`` and ``SMALL_INPUT_BYTES``, alternating them
so that drift in the machine's speed hits all; it prints the medians of the
read alone (``read_table``, text to Arrow columns, which is all the strategy
changes) and the ratios inline / tiny and threaded / inline (above 1: the
first named is slower). The tiny parser is timed on files up to
``--tiny-max-mb`` only (it holds the whole text and several per-byte arrays).

    python bench/bench_reader_strategy.py --dir /tmp/gk-reader --repeats 9
    python bench/bench_reader_strategy.py --queries 5,10,20,50,100,300 --repeats 21
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


def time_strategies(path: str, repeats: int, tiny: bool) -> dict[str, float]:
    """Median seconds of reading the run file ``path`` with each strategy."""
    strategies = [("inline", 0, 1 << 62), ("threaded", 0, 0)]
    if tiny:
        strategies.insert(0, ("tiny", 1 << 62, 1 << 62))
    times: dict[str, list[float]] = {name: [] for name, _, _ in strategies}
    saved = text_table.TINY_INPUT_BYTES, text_table.SMALL_INPUT_BYTES
    try:
        for _ in range(repeats + 1):  # the first round warms the page cache and is dropped
            for name, tiny_limit, small_limit in strategies:
                text_table.TINY_INPUT_BYTES, text_table.SMALL_INPUT_BYTES = tiny_limit, small_limit
                t0 = time.perf_counter()
                text_table.read_table(path, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)
                times[name].append(time.perf_counter() - t0)
    finally:
        text_table.TINY_INPUT_BYTES, text_table.SMALL_INPUT_BYTES = saved
    return {name: statistics.median(ts[1:]) for name, ts in times.items()}


def took_tiny_path(path: str) -> bool:
    """Whether the tiny parser accepts the file (else the timing is the Arrow reader's after a refusal)."""
    calls: list[object] = []
    real = text_table.parse_tiny
    saved = text_table.TINY_INPUT_BYTES
    text_table.parse_tiny = lambda *a, **k: calls.append(real(*a, **k)) or calls[-1]  # type: ignore[assignment]
    text_table.TINY_INPUT_BYTES = 1 << 62
    try:
        text_table.read_table(path, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)
    finally:
        text_table.parse_tiny, text_table.TINY_INPUT_BYTES = real, saved
    return any(c is not None for c in calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="where the synthetic files go (default: a temporary directory)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--queries", default=",".join(map(str, QUERIES)), help="comma-separated query counts (x 100 lines)")
    ap.add_argument("--tiny-max-mb", type=float, default=4.0, help="largest text (MB; gzip: 8x the file) the tiny parser is timed on")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="gk-reader-")
    print(f"{'file':<34} {'MB':>8} {'tiny ms':>8} {'inline ms':>10} {'threaded ms':>12} {'inline/tiny':>12} {'threaded/inline':>16}")
    for n in (int(x) for x in args.queries.split(",")):
        for gz in (False, True):
            _, run_path = write_synthetic(workdir, n, 100, seed=0, gzip_run=gz)
            mb = os.path.getsize(run_path) / 1e6
            tiny = mb * (8 if gz else 1) <= args.tiny_max_mb
            if tiny:
                assert took_tiny_path(run_path), f"the tiny parser refused {run_path}"
            t = time_strategies(run_path, args.repeats, tiny)
            tiny_ms = f"{1e3 * t['tiny']:8.2f}" if tiny else f"{'-':>8}"
            ratio_tiny = f"{t['inline'] / t['tiny']:12.2f}" if tiny else f"{'-':>12}"
            print(f"{os.path.basename(run_path):<34} {mb:8.2f} {tiny_ms} {1e3 * t['inline']:10.2f} {1e3 * t['threaded']:12.2f} "
                  f"{ratio_tiny} {t['threaded'] / t['inline']:16.2f}", flush=True)


if __name__ == "__main__":
    main()
