"""ir_measures' calc_aggregate through the gpukit provider and through its default pytrec_eval provider.

    python bench/compare_ir_measures.py [--topics 250] [--docs 1000] [--runs 3] [--repeats 5]

The data of bench/compare_pytrec_compat.py (seeded: topics x retrieved
documents, about 40 graded judgments a topic, scores to 3 decimals, so there
are ties), as ir_measures takes it (dicts). Measures: nDCG@10, nDCG, AP,
AP@100, P@10, R@100, RR, Rprec, ``rel=2`` P@10. Timed in one process:
``provider.calc_aggregate(measures, qrels, run)`` for each run, median of
``--repeats``, the two providers alternating; per-query values from
``iter_calc`` are compared first (exit 1 unless they agree to 1e-9).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import ir_measures  # noqa: E402
from ir_measures import AP, P, R, RR, Rprec, nDCG  # noqa: E402

from compare_pytrec_compat import make_data  # noqa: E402
from gpukit.compat.ir_measures import register  # noqa: E402

MEASURES = [nDCG @ 10, nDCG, AP, AP @ 100, P @ 10, R @ 100, RR, Rprec, P(rel=2) @ 10]


def per_query(provider, qrels, run) -> dict:
    return {(m.query_id, str(m.measure)): m.value for m in provider.iter_calc(MEASURES, qrels, run)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=250)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    qrels, runs = make_data(args.topics, args.docs, args.runs)
    providers = {"gpukit": register(first=False, device="cpu"), "pytrec_eval": ir_measures.pytrec_eval}
    a, b = per_query(providers["gpukit"], qrels, runs[0]), per_query(providers["pytrec_eval"], qrels, runs[0])
    worst = max(abs(a[key] - b[key]) for key in b)
    if a.keys() != b.keys() or worst > 1e-9:
        print(f"disagree: {len(a)} vs {len(b)} values, max |diff| {worst}")
        return 1
    times: dict[str, list[float]] = {name: [] for name in providers}
    for r in range(args.repeats + 1):  # round 0 warms up
        for name in (list(providers) if r % 2 else list(providers)[::-1]):
            started = time.perf_counter()
            for run in runs:
                providers[name].calc_aggregate(MEASURES, qrels, run)
            if r:
                times[name].append(time.perf_counter() - started)
    gk, pt = statistics.median(times["gpukit"]), statistics.median(times["pytrec_eval"])
    paired = statistics.median(p / g for p, g in zip(times["pytrec_eval"], times["gpukit"]))
    print(f"ir_measures {ir_measures.__version__}: {args.topics} topics x {args.docs} documents, {args.runs} runs, "
          f"{len(MEASURES)} measures, {args.repeats} repeats; {len(b)} per-query values agree (max |diff| {worst:.2g})")
    print(f"gpukit provider {gk:7.3f} s   pytrec_eval provider {pt:7.3f} s   pytrec_eval/gpukit {pt / gk:.2f}x "
          f"(median of paired rounds {paired:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
