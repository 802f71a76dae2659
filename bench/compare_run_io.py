"""Runs written and read: gpukit's Run.save / from_trec / from_parquet against ranx's Run.

The same seeded synthetic run for both: TOPICS topics x DOCS documents (ids
like ``D1234567``, scores to 4 decimals, so ties). Stages, each one call in
one process, the two libraries alternating over ``--repeats`` rounds
(paired), medians printed with the median of the paired ratios:

* write TREC: ``Run.save(path)`` against ranx's ``Run.save(path, kind="trec")``;
* read TREC: ``Run.from_trec`` against ``ranx.Run.from_file(path, kind="trec")``,
  each reading the file it wrote;
* read Parquet: ``Run.from_parquet`` against ``ranx.Run.from_parquet`` of one
  file (columns q_id, doc_id, score) written by pyarrow.

    python bench/compare_run_io.py [--topics 10000 --docs 100 --repeats 5]
    python bench/compare_run_io.py --check

``--check`` exits 1 unless each library reads the other's TREC file and the
Parquet file to the same (query, document, score) triples as its own
(scores to 1e-12: both print shortest round-trip floats or more digits).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's gpukit


def make_columns(topics: int, docs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qids = [str(300 + t) for t in range(topics) for _ in range(docs)]
    starts = rng.integers(0, 10**8, topics)
    step = 7919  # prime, coprime with 10**8: the ids of one topic are distinct
    dids = [f"D{(int(b) + i * step) % 10**8:08d}" for b in starts for i in range(docs)]
    scores = np.round(rng.random(topics * docs) * 20, 4)
    return qids, dids, scores


def as_dict(run) -> dict[str, dict[str, float]]:
    return {q: dict(d) for q, d in run.to_dict().items()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[q].keys() == b[q].keys() and all(abs(a[q][d] - b[q][d]) <= 1e-12 for d in a[q]) for q in a)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    import warnings

    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ranx

    with warnings.catch_warnings():  # ranx 0.3 asserts object-dtype id columns, pandas 3 reads str ones
        warnings.simplefilter("ignore")
        pd.set_option("future.infer_string", False)

    import gpukit

    q, d, s = make_columns(args.topics, args.docs)
    ours = gpukit.Run.from_arrays(q, d, s, name="bench")
    theirs = ranx.Run.from_dict({k: dict(v) for k, v in ours.to_dict().items()}, name="bench")
    with tempfile.TemporaryDirectory() as tmp:
        ours_path, theirs_path, parquet_path = (os.path.join(tmp, n) for n in ("gpukit.trec", "ranx.trec", "run.parquet"))
        pq.write_table(pa.table({"q_id": q, "doc_id": d, "score": s}), parquet_path)
        stages = {
            "write TREC": (lambda: ours.save(ours_path), lambda: theirs.save(theirs_path, kind="trec")),
            "read TREC": (lambda: gpukit.Run.from_trec(ours_path), lambda: ranx.Run.from_file(theirs_path, kind="trec")),
            "read Parquet": (lambda: gpukit.Run.from_parquet(parquet_path, query_col="q_id"),
                             lambda: ranx.Run.from_parquet(parquet_path)),
        }
        for write in (stages["write TREC"][0], stages["write TREC"][1]):
            write()
        if args.check:
            want = as_dict(ours)
            reads = {
                "gpukit reads ranx's TREC": as_dict(gpukit.Run.from_trec(theirs_path)),
                "gpukit reads Parquet": as_dict(gpukit.Run.from_parquet(parquet_path, query_col="q_id")),
                "ranx reads gpukit's TREC": ranx.Run.from_file(ours_path, kind="trec").to_dict(),
                "ranx reads Parquet": ranx.Run.from_parquet(parquet_path).to_dict(),
                "ranx reads its TREC": ranx.Run.from_file(theirs_path, kind="trec").to_dict(),
            }
            bad = [name for name, got in reads.items() if not same(want, {k: dict(v) for k, v in got.items()})]
            print(f"{args.topics} x {args.docs}: " + ("every read agrees" if not bad else "differ: " + ", ".join(bad)))
            return 1 if bad else 0
        timings: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in stages}
        for r in range(args.repeats):
            for name, (g, x) in stages.items():
                for who, fn in ((0, g), (1, x)) if r % 2 else ((1, x), (0, g)):
                    t = time.perf_counter()
                    fn()
                    timings[name][who].append(time.perf_counter() - t)
    print(f"{args.topics} topics x {args.docs} docs, {args.repeats} paired rounds, medians (s):")
    print("| stage | gpukit | ranx | ranx / gpukit (paired) |\n|---|---|---|---|")
    for name, (g, x) in timings.items():
        ratio = statistics.median(b / a for a, b in zip(g, x))
        print(f"| {name} | {statistics.median(g):.3f} | {statistics.median(x):.3f} | {ratio:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
