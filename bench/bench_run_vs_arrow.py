"""``Run.from_trec`` against pyarrow's bare multi-threaded ``read_csv`` of the same file.

The bare read is the floor any Arrow-based reader starts from: the same
space-delimited parse (no quoting, every column read, pyarrow's threads on),
with none of gpukit's checks, id coding or (Q, K) layout. The two alternate,
``--repeats`` times (a first round is dropped), and the medians and their
ratio are printed. Data: the synthetic run of bench/gen_synthetic.py
(``--queries`` x ``--depth``, doc ids of at most 8 bytes), or ``--run FILE``.

    python bench/bench_run_vs_arrow.py --dir /tmp/gk --queries 100000 --depth 100 --repeats 5
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]  # this checkout's gpukit, then the generators

import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402

from gpukit.data.run import Run  # noqa: E402


def bare_read(path: str) -> pa.Table:
    """pyarrow's CSV reader, multi-threaded, on the whole file: six space-separated columns."""
    return pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=["q", "q0", "d", "r", "s", "t"], use_threads=True),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False),
        convert_options=pacsv.ConvertOptions(column_types={"q": pa.string(), "d": pa.string(), "s": pa.float64()}),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=None, help="a TREC run file (default: write the synthetic one)")
    ap.add_argument("--dir", default="/tmp/gk-run-vs-arrow", help="where the synthetic files go")
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    path = args.run
    if path is None:
        from gen_synthetic import write_synthetic

        path = write_synthetic(args.dir, args.queries, args.depth)[1]
    times: dict[str, list[float]] = {"Run.from_trec": [], "bare read_csv": []}
    for _ in range(args.repeats + 1):
        for name, fn in (("Run.from_trec", Run.from_trec), ("bare read_csv", bare_read)):
            gc.collect()
            t0 = time.perf_counter()
            result = fn(path)
            times[name].append(time.perf_counter() - t0)
            del result
    ours, bare = (statistics.median(times[k][1:]) for k in ("Run.from_trec", "bare read_csv"))
    print(f"{os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB): Run.from_trec {ours:.3f} s, "
          f"bare read_csv {bare:.3f} s, ratio {ours / bare:.2f} (median of {args.repeats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
