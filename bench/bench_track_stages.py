"""When each stage of one track run is done: qrels, run text, run, means.

``gpukit.read_trec_files`` (the read-ahead worker parses the run's text while
the calling thread builds the qrels) then ``gpukit.evaluate`` (six measures,
trec_eval convention) of one run of bench/gen_track.py's synthetic track,
in one process. Per round, the time since the round's start at which the
qrels are built, the worker has parsed the run's text, the run is built,
and its means are out; medians of ``--repeats`` rounds after ``--warmup``.
``--second-run`` also times ``evaluate`` of another run against the same
Qrels (its derived tables then reused). Runs from any checkout (this file's
parent is put first on the path), so that two checkouts can be compared in
one sitting.

    python bench/bench_track_stages.py --dir /tmp/gk-track --topics 100 --gzip
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import gpukit  # noqa: E402
import gpukit.data.run_texts as run_texts  # noqa: E402
from gen_track import write_track  # noqa: E402
from gpukit.data.run import Run  # noqa: E402
from gpukit.data.trec_files import read_trec_files  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402

MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="where the synthetic track is (written there if absent)")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--gzip", action="store_true", help="gzipped runs")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--second-run", action="store_true", help="also time evaluate of a second run against the same Qrels")
    args = ap.parse_args()
    qrels_path, run_paths = write_track(os.path.join(args.dir, "gz" if args.gzip else "plain"), args.topics, 2, gzip_runs=args.gzip)
    measures = parse_measures(MEASURES)
    parsed_at: list[float] = []
    real = run_texts.read_run_table

    def timed(path, *stop):  # stop: the worker's stop event, where the checkout has one
        table = real(path, *stop)
        parsed_at.append(time.perf_counter())
        return table

    run_texts.read_run_table = timed
    rows = []
    for _ in range(args.warmup + args.repeats):
        second = Run.from_trec(run_paths[1]) if args.second_run else None
        gc.collect()
        parsed_at.clear()
        t0 = time.perf_counter()
        qrels, runs = read_trec_files(qrels_path, run_paths[:1])
        t_qrels = time.perf_counter()
        run = next(runs)
        t_run = time.perf_counter()
        report = gpukit.evaluate(qrels, run, measures, convention="trec_eval")
        [report[m].mean for m in MEASURES]
        t_means = time.perf_counter()
        list(runs)
        row = [t_qrels - t0, parsed_at[0] - t0, t_run - t0, t_means - t0]
        if second is not None:
            t = time.perf_counter()
            gpukit.evaluate(qrels, second, measures, convention="trec_eval")
            row.append(time.perf_counter() - t)
        rows.append(row)
    med = [1e3 * statistics.median(col) for col in zip(*rows[args.warmup:])]
    names = ["qrels built", "run text parsed", "run built", "means out", "second run's evaluate"]
    print(f"{args.topics} topics x 1000, 1 run{', gzipped' if args.gzip else ''} (ms since start, medians of {args.repeats}):")
    for name, value in zip(names, med):
        print(f"  {name:24s} {value:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
