"""gpukit.evaluate against pyndeval (ndeval.c compiled) on the same in-memory data.

Synthetic data (deterministic): Q queries x K ranked docs, 3-8 subtopics per
query, ``--judged`` judged docs per subtopic drawn from the query's top 2K
candidates (grade 1 with probability 0.3, else 0), run scores from 1000
levels (ties). Both tools get the same ranking: the run is handed to
pyndeval with distinct scores in gpukit's order (score descending, docno
descending). ndeval's 21 measures (alpha = beta = 0.5, cutoffs 5, 10, 20).

Timed: gpukit ``SubtopicQrels.from_arrays`` + ``Run.from_arrays`` +
``gpukit.evaluate`` with SubtopicQrels; pyndeval ``RelevanceEvaluator(qrels)`` +
``evaluate(run)`` on lists of tuples (its input form). Data generation and
building the tuples are not timed. Per-query values are compared (max abs
difference printed; nNRBP NaN for no relevant subtopic counts as 0).

    python bench/compare_diversity.py --queries 10000 --depth 1000 --repeats 3
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import gpukit
from gpukit.judgments.subtopics import SubtopicQrels
from gpukit.families.diversity import NDEVAL_MEASURES

PYNDEVAL_NAME = {"ERR_IA": "ERR-IA", "nERR_IA": "nERR-IA", "alpha_DCG": "alpha-DCG", "alpha_nDCG": "alpha-nDCG",
                 "P_IA": "P-IA", "StRecall": "strec", "NRBP": "NRBP", "nNRBP": "nNRBP", "AP_IA": "MAP-IA"}


def make_data(n_q: int, depth: int, judged: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    q_rows, s_rows, d_rows, g_rows = [], [], [], []
    for q in range(n_q):
        for s in range(1, int(rng.integers(3, 9)) + 1):
            docs = rng.choice(2 * depth, size=judged, replace=False)
            q_rows.append(np.full(judged, q))
            s_rows.append(np.full(judged, s))
            d_rows.append(docs)
            g_rows.append((rng.random(judged) < 0.3).astype(np.int64))
    qrels = [np.concatenate(a) for a in (q_rows, s_rows, d_rows, g_rows)]
    run_q = np.repeat(np.arange(n_q), depth)
    run_d = np.concatenate([rng.choice(2 * depth, size=depth, replace=False) for _ in range(n_q)])
    run_s = rng.integers(0, 1000, size=n_q * depth).astype(np.float64)
    return qrels, (run_q, run_d, run_s)


def ids(prefix: str, values: np.ndarray) -> list[str]:
    return [f"{prefix}{v}" for v in values.tolist()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=40, help="judged docs per subtopic")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    (qq, qs, qd, qg), (rq, rd, rs) = make_data(args.queries, args.depth, args.judged)
    q_ids, d_ids, rq_ids, rd_ids = ids("q", qq), ids("d", qd), ids("q", rq), ids("d", rd)
    s_ids = [str(s) for s in qs.tolist()]

    def run_gpukit():
        qrels = SubtopicQrels.from_arrays(q_ids, s_ids, d_ids, qg)
        run = gpukit.Run.from_arrays(rq_ids, rd_ids, rs)
        return gpukit.evaluate(qrels, run, "ndeval", convention="trec_eval")

    times_g = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        report = run_gpukit()
        times_g.append(time.perf_counter() - t0)

    import pyndeval

    # Same ranking for pyndeval: gpukit's order (score desc, docno desc) as distinct scores.
    tuples, by_q = [], {}
    for i, q in enumerate(rq_ids):
        by_q.setdefault(q, []).append(i)
    for q, rows in by_q.items():
        rows.sort(key=lambda i: rd_ids[i].encode(), reverse=True)  # docno descending, then (stable) score
        rows.sort(key=lambda i: rs[i], reverse=True)
        tuples.extend((q, rd_ids[i], float(len(rows) - r)) for r, i in enumerate(rows))
    qrel_tuples = list(zip(q_ids, s_ids, d_ids, qg.tolist()))
    names = [PYNDEVAL_NAME[m.split("@")[0]] + ("@" + m.split("@")[1] if "@" in m else "") for m in NDEVAL_MEASURES]
    times_p = []
    for _ in range(max(1, min(args.repeats, 2))):
        t0 = time.perf_counter()
        theirs = pyndeval.RelevanceEvaluator(qrel_tuples, names).evaluate(tuples)
        times_p.append(time.perf_counter() - t0)

    worst = 0.0
    for ours_name, nd in zip(NDEVAL_MEASURES, names):
        per_query = dict(zip(report.query_ids, report[ours_name].per_query.tolist()))
        for q, values in theirs.items():
            want = 0.0 if math.isnan(values[nd]) else values[nd]
            worst = max(worst, abs(per_query[q] - want))
    g, p = statistics.median(times_g), statistics.median(times_p)
    print(f"{args.queries} queries x {args.depth} docs, {len(qg)} subtopic judgments, 21 measures")
    print(f"gpukit   {g:.2f} s (median of {len(times_g)})")
    print(f"pyndeval {p:.2f} s (median of {len(times_p)})")
    print(f"pyndeval / gpukit = {p / g:.2f}; max |difference| per query = {worst:.2e}")


if __name__ == "__main__":
    main()
