"""User-model measures: gpukit.evaluate against ir_measures' providers on the same in-memory data.

Synthetic data (deterministic): Q queries x K ranked docs; per query
``--judged`` judged docs drawn from its 2K candidates with grades 0..4
(probabilities 0.5, 0.2, 0.15, 0.1, 0.05); run scores from 1000 levels
(ties). Every tool reads the same ranking: the anchors get the run with
distinct scores in gpukit's order (score descending, doc id descending).

Measures and anchors (ir_measures 0.4 providers):

* ``ERR@10``: gdeval provider (gdeval.pl, perl).
* ``SDCG@10, NERR8@10, NERR9@10, NERR10, NERR11, INST, INSQ, BPM@10`` with
  ``max_rel=4``: cwl_eval provider.
* ``RBP(p=0.8)``: no installed provider computes graded RBP (trectools is not
  installed), so it is timed on the binarised qrels (grade >= 1 -> 1), where
  gpukit's RBP(p=0.8) is cwl_eval's ``RBP(rel=1,p=0.8)``.

Timed: gpukit ``Qrels.from_arrays`` + ``Run.from_arrays`` + one ``evaluate``
of the group (and, apart, ``evaluate`` alone on the built inputs); ir_measures ``provider.evaluator(measures, qrels)`` + consuming
``iter_calc(run)`` on pandas frames (building the frames is not timed).
``--anchor-queries N`` gives the anchors (and a second gpukit timing) only
the first N queries, for anchors too slow at full size. Per-query values are
compared; the largest absolute difference is printed.

    python bench/compare_user_models.py --queries 10000 --depth 1000 --anchor-queries 1000
"""
from __future__ import annotations

import argparse
import logging
import statistics
import time

import numpy as np

import gpukit

CWL = ["SDCG(max_rel=4)@10", "NERR8(max_rel=4)@10", "NERR9(max_rel=4)@10", "NERR10(max_rel=4)", "NERR11(max_rel=4)",
       "INST(max_rel=4)", "INSQ(max_rel=4)", "BPM(max_rel=4)@10"]
GROUPS = {  # group: (gpukit names, ir_measures names, provider, binarised qrels)
    "ERR": (["ERR@10"], ["ERR@10"], "gdeval", False),
    "cwl": (CWL, CWL, "cwl_eval", False),
    "RBP": (["RBP(p=0.8)"], ["RBP(rel=1,p=0.8)"], "cwl_eval", True),
}


def make_data(n_q: int, depth: int, judged: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qq = np.repeat(np.arange(n_q), judged)
    qd = np.concatenate([rng.choice(2 * depth, size=judged, replace=False) for _ in range(n_q)])
    qg = rng.choice(5, size=n_q * judged, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    rq = np.repeat(np.arange(n_q), depth)
    rd = np.concatenate([rng.choice(2 * depth, size=depth, replace=False) for _ in range(n_q)])
    rs = rng.integers(0, 1000, size=n_q * depth).astype(np.float64)
    return (qq, qd, qg), (rq, rd, rs)


def ids(prefix: str, values: np.ndarray) -> list[str]:
    return [f"{prefix}{v}" for v in values.tolist()]


def median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def frames(qrels, run, n_q: int, binary: bool):
    """ir_measures' inputs for the first n_q queries: run scores distinct, in gpukit's order."""
    import pandas as pd

    (qq, qd, qg), (rq, rd, rs) = qrels, run
    keep_q, keep_r = qq < n_q, rq < n_q
    grades = (qg[keep_q] >= 1).astype(np.int64) if binary else qg[keep_q]
    qrels_df = pd.DataFrame({"query_id": ids("", qq[keep_q]), "doc_id": ids("d", qd[keep_q]), "relevance": grades})
    q, d, s = rq[keep_r], ids("d", rd[keep_r]), rs[keep_r]
    order = sorted(range(len(d)), key=lambda i: d[i].encode(), reverse=True)  # doc id descending, then (stable) score
    order.sort(key=lambda i: (q[i], -s[i]))
    position = np.empty(len(order), dtype=np.float64)
    position[order] = -np.arange(len(order), dtype=np.float64)  # distinct, descending in gpukit's order
    run_df = pd.DataFrame({"query_id": ids("", q), "doc_id": d, "score": position})
    return qrels_df, run_df


def gpukit_eval(qrels, run, n_q: int, names: list[str], binary: bool):
    (qq, qd, qg), (rq, rd, rs) = qrels, run
    keep_q, keep_r = qq < n_q, rq < n_q
    q_ids, d_ids = ids("", qq[keep_q]), ids("d", qd[keep_q])
    grades = (qg[keep_q] >= 1).astype(np.int64) if binary else qg[keep_q]
    r_ids, rd_ids, scores = ids("", rq[keep_r]), ids("d", rd[keep_r]), rs[keep_r]

    def whole():
        return gpukit.evaluate(gpukit.Qrels.from_arrays(q_ids, d_ids, grades), gpukit.Run.from_arrays(r_ids, rd_ids, scores),
                               names, convention="trec_eval")

    built = (gpukit.Qrels.from_arrays(q_ids, d_ids, grades), gpukit.Run.from_arrays(r_ids, rd_ids, scores))

    def evaluate_only():
        return gpukit.evaluate(*built, names, convention="trec_eval")
    return whole, evaluate_only


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=100, help="judged docs per query")
    ap.add_argument("--anchor-queries", type=int, default=None, help="queries given to the anchors (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--anchor-repeats", type=int, default=1)
    ap.add_argument("--groups", default="ERR,cwl,RBP")
    args = ap.parse_args()
    logging.getLogger("ir_measures.cwl_eval").setLevel(logging.ERROR)
    import ir_measures

    qrels, run = make_data(args.queries, args.depth, args.judged)
    n_anchor = args.anchor_queries or args.queries
    print(f"{args.queries} queries x {args.depth} docs, {args.judged} judged per query; anchors on {n_anchor} queries; "
          f"gpukit {gpukit.__version__}, ir_measures {ir_measures.__version__}")
    gpukit_eval(qrels, run, 10, ["nDCG@10"], False)[0]()  # warm-up: imports and first-call set-up, not timed
    for group in args.groups.split(","):
        ours_names, their_names, provider_name, binary = GROUPS[group]
        whole, evaluate_only = gpukit_eval(qrels, run, args.queries, ours_names, binary)
        full, _ = median_time(whole, args.repeats)
        full_eval, _ = median_time(evaluate_only, args.repeats)
        same, report = median_time(gpukit_eval(qrels, run, n_anchor, ours_names, binary)[0], args.repeats)
        qrels_df, run_df = frames(qrels, run, n_anchor, binary)
        provider = ir_measures.providers.registry[provider_name]
        measures = {ir_measures.parse_measure(t): o for t, o in zip(their_names, ours_names)}

        def anchor():
            return list(provider.evaluator(list(measures), qrels_df).iter_calc(run_df))
        theirs_t, theirs = median_time(anchor, args.anchor_repeats)
        per_query = {m: dict(zip(report.query_ids, report[m].per_query.tolist())) for m in ours_names}
        worst = max(abs(per_query[measures[v.measure]][v.query_id] - float(v.value)) for v in theirs)
        print(f"{group:4s} {len(ours_names)} measure(s) vs {provider_name}: gpukit {full:.2f} s at {args.queries} queries "
              f"({full_eval:.2f} s of it in evaluate, inputs built); "
              f"{same:.2f} s at {n_anchor}; {provider_name} {theirs_t:.2f} s at {n_anchor}; "
              f"ratio {theirs_t / same:.1f}x (same queries); {len(theirs)} values, max |difference| {worst:.1e}")


if __name__ == "__main__":
    main()
