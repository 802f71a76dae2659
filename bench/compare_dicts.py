"""Dict inputs: ``Run.from_dict`` + ``Qrels.from_dict`` + ``gpukit.evaluate`` against pytrec_eval.

The pytrec_eval / ranx / BEIR shape (``{qid: {docno: score}}`` and
``{qid: {docno: grade}}``), the same seeded synthetic data for both: TOPICS
topics x DOCS retrieved documents (ids like ``D1234567``, scores to 4
decimals, so ties), JUDGED judgments a topic (grades 0-3, about a third of
them retrieved). pytrec_eval's whole job is ``RelevanceEvaluator(qrels,
MEASURES).evaluate(run)``; gpukit's is building both inputs from the dicts
and ``evaluate`` with the same five measures (nDCG@10, AP, P@10, R@100, RR).

    python bench/compare_dicts.py steady [--topics 2000 --docs 1000 --repeats 7]
    python bench/compare_dicts.py first gpukit|pytrec_eval
    python bench/compare_dicts.py check

``steady``: in one process after a warm-up call, the two alternating
(paired) over ``--repeats`` rounds; prints the medians of gpukit's stages
(Run.from_dict, Qrels.from_dict, evaluate, total) and of pytrec_eval's whole
job, and the median of the paired ratios. ``first``: the first call in a
fresh process after the imports (``from gpukit import Run, Qrels, evaluate``
imports torch, about 1 s here, and is not counted: a script that evaluates
once pays it besides),
one line with the seconds; run it several times, alternating. ``check``:
exits 1 unless every per-query value agrees to 1e-12.
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

GPUKIT_MEASURES = ["nDCG@10", "AP", "P@10", "R@100", "RR"]
PYTREC_MEASURES = {"ndcg_cut.10", "map", "P.10", "recall.100", "recip_rank"}
PYTREC_NAMES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "P@10": "P_10", "R@100": "recall_100", "RR": "recip_rank"}


def make_data(topics: int, docs: int, judged: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for t in range(topics):
        qid = str(300 + t)
        ids = rng.choice(10_000_000, size=docs + judged, replace=False)
        names = [f"D{i:07d}" for i in ids]
        scores = np.round(rng.random(docs) * 20, 4).tolist()
        run[qid] = dict(zip(names[:docs], scores))
        picks = rng.permutation(docs + judged)[:judged]  # about docs/(docs+judged) of them retrieved
        qrels[qid] = {names[i]: int(g) for i, g in zip(picks, rng.choice(4, judged, p=[0.4, 0.3, 0.2, 0.1]))}
    return run, qrels


def gpukit_job(run: dict, qrels: dict, stages: dict[str, list[float]] | None = None):
    from gpukit import Qrels, Run, evaluate

    t0 = time.perf_counter()
    r = Run.from_dict(run)
    t1 = time.perf_counter()
    q = Qrels.from_dict(qrels)
    t2 = time.perf_counter()
    report = evaluate(q, r, GPUKIT_MEASURES)
    per_query = report.by_query()
    t3 = time.perf_counter()
    if stages is not None:
        for name, seconds in (("Run.from_dict", t1 - t0), ("Qrels.from_dict", t2 - t1), ("evaluate", t3 - t2), ("gpukit total", t3 - t0)):
            stages.setdefault(name, []).append(seconds)
    return per_query


def pytrec_job(run: dict, qrels: dict):
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)


def steady(run: dict, qrels: dict, repeats: int) -> int:
    gpukit_job(run, qrels)
    pytrec_job(run, qrels)
    stages: dict[str, list[float]] = {}
    theirs: list[float] = []
    for r in range(repeats):
        for who in (("gpukit", "pytrec") if r % 2 else ("pytrec", "gpukit")):
            if who == "gpukit":
                gpukit_job(run, qrels, stages)
            else:
                t = time.perf_counter()
                pytrec_job(run, qrels)
                theirs.append(time.perf_counter() - t)
    ratios = [p / g for p, g in zip(theirs, stages["gpukit total"])]
    shown = "; ".join(f"{name} {statistics.median(v):.3f} s" for name, v in stages.items())
    print(f"{len(run)} topics x {len(next(iter(run.values())))} docs, {repeats} paired rounds, medians: {shown}; "
          f"pytrec_eval {statistics.median(theirs):.3f} s; pytrec_eval / gpukit {statistics.median(ratios):.2f}x")
    return 0


def first(run: dict, qrels: dict, who: str) -> int:
    if who == "gpukit":
        from gpukit import Qrels, Run, evaluate  # noqa: F401  the imports (torch's too) are not the call

        stages: dict[str, list[float]] = {}
        gpukit_job(run, qrels, stages)
        print("gpukit first call " + "; ".join(f"{name} {v[0]:.3f} s" for name, v in stages.items()))
        return 0
    else:
        import pytrec_eval  # noqa: F401

        t = time.perf_counter()
        pytrec_job(run, qrels)
    print(f"{who} first call {time.perf_counter() - t:.3f} s")
    return 0


def check(run: dict, qrels: dict) -> int:
    ours, theirs = gpukit_job(run, qrels), pytrec_job(run, qrels)
    worst = 0.0
    for qid, values in theirs.items():
        for measure, name in PYTREC_NAMES.items():
            worst = max(worst, abs(ours[qid][measure] - values[name]))
    print(f"{len(theirs)} topics x {len(PYTREC_NAMES)} measures: max |diff| {worst:.3g}")
    return 0 if worst <= 1e-12 and set(ours) == set(theirs) else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["steady", "first", "check"])
    parser.add_argument("who", nargs="?", choices=["gpukit", "pytrec_eval"], default="gpukit")
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--judged", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    run, qrels = make_data(args.topics, args.docs, args.judged)
    if args.mode == "steady":
        return steady(run, qrels, args.repeats)
    if args.mode == "first":
        return first(run, qrels, args.who)
    return check(run, qrels)


if __name__ == "__main__":
    sys.exit(main())
