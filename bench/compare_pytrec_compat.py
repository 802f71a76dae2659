"""The same pytrec_eval-API evaluation through pytrec_eval and through gpukit.compat.pytrec_eval.

BEIR's/MTEB's call, unchanged: one ``RelevanceEvaluator(qrels, {"map_cut.1,3,5,10,100,1000",
"ndcg_cut...", "recall...", "P..."})`` and ``evaluate(run)`` for every run, on
dicts (``{qid: {docno: grade}}``, ``{qid: {docno: score}}``), then the means
with ``compute_aggregated_measure``. The data is synthetic and the same for
both (seeded): TOPICS topics x DOCS retrieved documents, about 40 judgments a
topic (grades 0-3), scores rounded to 3 decimals (ties), RUNS runs.

    python bench/compare_pytrec_compat.py pytrec_eval|compat|check|per-run [--topics 250 --docs 1000 --runs 10]

``pytrec_eval`` / ``compat`` run the evaluation with that module and print
nothing; time them as whole processes. ``check`` runs both and exits 1 unless
every per-query value agrees to 1e-12. ``per-run`` times one ``evaluate(run)``
in one process, after imports and the evaluators' construction: CPU seconds
(user + system of the process, ``time.process_time``) and wall seconds per
call, the two modules alternating over ``--repeats`` rounds of the ``--runs``
runs; prints the medians and the median of the per-call CPU ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's gpukit

CUTS = "1,3,5,10,100,1000"
MEASURES = {f"map_cut.{CUTS}", f"ndcg_cut.{CUTS}", f"recall.{CUTS}", f"P.{CUTS}"}


def make_data(topics: int, docs: int, runs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    pool = [f"doc{i}" for i in range(20 * docs)]
    qrels, run_list = {}, [{} for _ in range(runs)]
    for t in range(topics):
        qid = str(1000 + t)
        picks = rng.choice(len(pool), size=docs + 20, replace=False)
        judged = picks[rng.random(len(picks)) < 0.04]
        qrels[qid] = {pool[d]: int(g) for d, g in zip(judged, rng.choice(4, len(judged), p=[0.5, 0.25, 0.15, 0.1]))}
        for r in range(runs):
            retrieved = picks[rng.permutation(len(picks))[:docs]]
            scores = np.round(rng.random(docs), 3)
            run_list[r][qid] = {pool[d]: float(s) for d, s in zip(retrieved, scores)}
    return qrels, run_list


def evaluate(module, qrels, runs):
    evaluator = module.RelevanceEvaluator(qrels, MEASURES)
    out = []
    for run in runs:
        per_query = evaluator.evaluate(run)
        names = next(iter(per_query.values())).keys()
        means = {m: module.compute_aggregated_measure(m, [v[m] for v in per_query.values()]) for m in names}
        out.append((per_query, means))
    return out


def per_run(qrels, runs, repeats: int) -> int:
    import pytrec_eval

    from gpukit.compat import pytrec_eval as compat

    evaluators = {"pytrec_eval": pytrec_eval.RelevanceEvaluator(qrels, MEASURES), "compat": compat.RelevanceEvaluator(qrels, MEASURES)}
    for evaluator in evaluators.values():  # warm-up call, not counted
        evaluator.evaluate(runs[0])
    cpu: dict[str, list[float]] = {name: [] for name in evaluators}
    wall: dict[str, list[float]] = {name: [] for name in evaluators}
    for r in range(repeats):
        for run in runs:
            for name in (list(evaluators) if r % 2 else list(evaluators)[::-1]):
                c, w = time.process_time(), time.perf_counter()
                evaluators[name].evaluate(run)
                cpu[name].append(time.process_time() - c)
                wall[name].append(time.perf_counter() - w)
    pairs = [p / g for p, g in zip(cpu["pytrec_eval"], cpu["compat"])]
    print(f"{len(qrels)} topics x {sum(map(len, runs[0].values())) // len(runs[0])} documents, {len(runs) * repeats} calls each; "
          f"medians per evaluate(run): pytrec_eval cpu {statistics.median(cpu['pytrec_eval']):.3f} s wall "
          f"{statistics.median(wall['pytrec_eval']):.3f} s; compat cpu {statistics.median(cpu['compat']):.3f} s wall "
          f"{statistics.median(wall['compat']):.3f} s; pytrec_eval/compat cpu {statistics.median(pairs):.2f}x (median of paired calls)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["pytrec_eval", "compat", "check", "per-run"])
    parser.add_argument("--topics", type=int, default=250)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="per-run: rounds over the runs")
    args = parser.parse_args()
    qrels, runs = make_data(args.topics, args.docs, args.runs)
    if args.mode == "per-run":
        return per_run(qrels, runs, args.repeats)
    if args.mode == "pytrec_eval":
        import pytrec_eval

        evaluate(pytrec_eval, qrels, runs)
        return 0
    from gpukit.compat import pytrec_eval as compat

    if args.mode == "compat":
        evaluate(compat, qrels, runs)
        return 0
    import pytrec_eval

    theirs, ours = evaluate(pytrec_eval, qrels, runs), evaluate(compat, qrels, runs)
    worst = 0.0
    for (a, _), (b, _) in zip(theirs, ours):
        if list(a) != list(b) or any(list(a[q]) != list(b[q]) for q in a):
            print("different queries or names")
            return 1
        worst = max([worst] + [abs(a[q][m] - b[q][m]) for q in a for m in a[q]])
    print(f"{len(runs)} runs x {len(qrels)} topics x {len(next(iter(theirs[0][0].values())))} values: max |diff| {worst:.3g}")
    return 0 if worst <= 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
