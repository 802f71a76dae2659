"""Compat (gpukit.evaluate) against ir_measures' compat provider on the same in-memory data.

Synthetic data (deterministic): Q queries x K ranked docs, ``--judged``
judged docs per query drawn from the query's top 2K candidates (grades 0..3,
weights 5:3:2:1), run scores from 1000 levels (ties). Both tools get the
same ranking: the provider sorts ties by doc id ascending, gpukit (as
trec_eval) descending, so it is handed distinct scores in gpukit's order.
Measures: Compat (p = 0.95, normalised) and Compat(p=0.8,normalize=False).

Timed: gpukit ``Qrels.from_arrays`` + ``Run.from_arrays`` + ``evaluate`` (evaluate alone
also printed);
ir_measures ``provider.evaluator(measures, qrels)`` + ``iter_calc(run)``
on dicts of dicts (its input form). Data generation and building the dicts
are not timed. Per-query values are compared (max abs difference printed).
``--anchor-queries`` times the provider on the first N queries only (it is
pure Python, quadratic in the depth) and the ratio is per query.

    PYTHONPATH=. python bench/compare_compat.py --queries 10000 --depth 1000 --anchor-queries 1000 --repeats 3
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import gpukit
from compare_diversity import ids  # the same synthetic id strings (this script runs from bench/)

MEASURES = {"Compat": "Compat", "Compat(p=0.8,normalize=False)": "Compat(p=0.8,normalize=False)"}


def make_data(n_q: int, depth: int, judged: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qrels_q = np.repeat(np.arange(n_q), judged)
    qrels_d = np.concatenate([rng.choice(2 * depth, size=judged, replace=False) for _ in range(n_q)])
    qrels_g = rng.choice(4, size=n_q * judged, p=[5 / 11, 3 / 11, 2 / 11, 1 / 11])
    run_q = np.repeat(np.arange(n_q), depth)
    run_d = np.concatenate([rng.choice(2 * depth, size=depth, replace=False) for _ in range(n_q)])
    run_s = rng.integers(0, 1000, size=n_q * depth).astype(np.float64)
    return (qrels_q, qrels_d, qrels_g), (run_q, run_d, run_s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=100, help="judged docs per query")
    ap.add_argument("--anchor-queries", type=int, default=None, help="time ir_measures on the first N queries only")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    (qq, qd, qg), (rq, rd, rs) = make_data(args.queries, args.depth, args.judged)
    q_ids, d_ids, rq_ids, rd_ids = ids("q", qq), ids("d", qd), ids("q", rq), ids("d", rd)

    times_g, times_eval = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        qrels = gpukit.Qrels.from_arrays(q_ids, d_ids, qg)
        run = gpukit.Run.from_arrays(rq_ids, rd_ids, rs)
        t1 = time.perf_counter()
        report = gpukit.evaluate(qrels, run, list(MEASURES), convention="trec_eval")
        t2 = time.perf_counter()
        times_g.append(t2 - t0)
        times_eval.append(t2 - t1)

    import ir_measures

    n_anchor = args.queries if args.anchor_queries is None else min(args.anchor_queries, args.queries)
    wanted = {f"q{i}" for i in range(n_anchor)}
    qrels_dict: dict = {}
    for q, d, g in zip(q_ids, d_ids, qg.tolist()):
        if q in wanted:
            qrels_dict.setdefault(q, {})[d] = g
    # Same ranking for the provider: gpukit's order (score desc, doc id desc) as distinct scores.
    by_q: dict = {}
    for i, q in enumerate(rq_ids):
        if q in wanted:
            by_q.setdefault(q, []).append(i)
    run_dict = {}
    for q, rows in by_q.items():
        rows.sort(key=lambda i: rd_ids[i].encode(), reverse=True)
        rows.sort(key=lambda i: rs[i], reverse=True)
        run_dict[q] = {rd_ids[i]: float(len(rows) - r) for r, i in enumerate(rows)}
    provider = ir_measures.providers.registry["compat"]
    measures = [ir_measures.parse_measure(m) for m in MEASURES.values()]
    times_i = []
    for _ in range(max(1, min(args.repeats, 2))):
        t0 = time.perf_counter()
        theirs = list(provider.evaluator(measures, qrels_dict).iter_calc(run_dict))
        times_i.append(time.perf_counter() - t0)

    worst = 0.0
    for ours_name, their_name in MEASURES.items():
        per_query = dict(zip(report.query_ids, report[ours_name].per_query.tolist()))
        for metric in theirs:
            if str(metric.measure) == their_name:
                worst = max(worst, abs(per_query[metric.query_id] - metric.value))
    g, i = statistics.median(times_g), statistics.median(times_i)
    per_g, per_i = g / args.queries, i / n_anchor
    print(f"{args.queries} queries x {args.depth} docs, {len(qg)} judgments, {len(MEASURES)} measures; "
          f"ir_measures on {n_anchor} queries")
    print(f"gpukit      {g:.2f} s (median of {len(times_g)}), {per_g * 1e3:.3f} ms/query; of which evaluate() "
          f"{statistics.median(times_eval):.2f} s (the rest: building Qrels and Run from the id lists)")
    print(f"ir_measures {i:.2f} s (median of {len(times_i)}), {per_i * 1e3:.3f} ms/query")
    print(f"ir_measures / gpukit per query = {per_i / per_g:.1f}; max |difference| per query = {worst:.2e} "
          f"over {len(theirs)} values")


if __name__ == "__main__":
    main()
