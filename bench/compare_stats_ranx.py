"""Randomization-test comparison: ranx (numba, CPU) vs gpukit, same workload.

Synthetic graded qrels and ``--systems`` runs over ``--queries`` queries;
ranx.compare tests every pair of runs (Fisher randomization, ``--resamples``
permutations), so gpukit runs the same number of tests: evaluate every run,
then one batched ``paired_randomization_test`` over all pairs.

Two timings, each the median of ``--repeats`` runs after one warm-up (which
also absorbs numba's compilation):

* end to end: ``ranx.compare(qrels, runs, metric, stat_test="fisher")`` vs
  ``gpukit.evaluate`` per run + the batched all-pairs test;
* test only: ranx's ``fisher_randomization_test`` per pair on precomputed
  scores vs gpukit's kernel on the same scores.

Usage: ``python bench/compare_stats_ranx.py [--queries 1000] [--systems 3]
[--resamples 1000] [--repeats 3] [--device cpu]`` (defaults keep it short).
Without ranx installed only gpukit's timings are printed (a line says so).
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Callable

import numpy as np
import torch

import gpukit
from gpukit.stats import paired_randomization_test

METRIC_GPUKIT, METRIC_RANX = "nDCG@10", "ndcg@10"


def synthetic(n_queries: int, n_systems: int, depth: int = 50, seed: int = 0):
    """{qid: {doc: grade}} and per-system {qid: {doc: score}} with graded signal plus noise."""
    rng = np.random.default_rng(seed)
    qrels, runs = {}, [{} for _ in range(n_systems)]
    for q in range(n_queries):
        qid = f"q{q}"
        grades = rng.integers(0, 3, size=depth) * (rng.random(depth) < 0.3)
        qrels[qid] = {f"d{i}": int(g) for i, g in enumerate(grades) if g > 0} or {"d0": 1}
        for s, run in enumerate(runs):
            scores = grades * (0.1 + 0.001 * s) + rng.random(depth)  # close systems: mid-range p-values
            run[qid] = {f"d{i}": float(x) for i, x in enumerate(scores)}
    return qrels, runs


def median_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: numba JIT, allocator, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-ranx", action="store_true", help="time gpukit only (ranx's numba JIT takes ~30 s)")
    args = parser.parse_args()

    ranx = None
    if args.skip_ranx:
        print("skipped: ranx (--skip-ranx); timing gpukit only")
    else:
        try:
            import ranx
            from ranx.statistical_tests import fisher_randomization_test
        except ImportError:
            print("skipped: ranx (not installed); timing gpukit only")

    qrels_dict, run_dicts = synthetic(args.queries, args.systems, seed=args.seed)
    pairs = list(itertools.combinations(range(args.systems), 2))
    device = gpukit.device.resolve_device(args.device)

    qrels = gpukit.Qrels.from_dict(qrels_dict)
    runs = [gpukit.Run.from_dict(r, name=f"s{i}") for i, r in enumerate(run_dicts)]

    if ranx is not None:
        ranx_qrels = ranx.Qrels(qrels_dict)
        ranx_runs = [ranx.Run(r, name=f"s{i}") for i, r in enumerate(run_dicts)]

    def ranx_end_to_end():
        return ranx.compare(ranx_qrels, ranx_runs, [METRIC_RANX], stat_test="fisher",
                            n_permutations=args.resamples, random_seed=args.seed)

    def gpukit_scores() -> torch.Tensor:
        reports = [gpukit.evaluate(qrels, run, [METRIC_GPUKIT], device=device) for run in runs]
        return torch.stack([r[METRIC_GPUKIT].per_query for r in reports])

    def gpukit_all_pairs(scores: torch.Tensor):
        first, second = zip(*pairs)
        return paired_randomization_test(scores[list(first)], scores[list(second)], args.resamples,
                                         args.seed, device=device)

    # Precomputed per-query scores for the test-only timing (same values for both).
    scores = gpukit_scores()
    host = scores.cpu().numpy()

    def ranx_tests_only():
        return [fisher_randomization_test(host[i], host[j], args.resamples, 0.05, args.seed) for i, j in pairs]

    def ranx_time(fn: Callable[[], object]) -> float:
        return median_time(fn, args.repeats) if ranx is not None else float("nan")

    timings = {
        "end to end": (ranx_time(ranx_end_to_end),
                       median_time(lambda: gpukit_all_pairs(gpukit_scores()), args.repeats)),
        "test only": (ranx_time(ranx_tests_only),
                      median_time(lambda: gpukit_all_pairs(scores), args.repeats)),
    }
    print(f"workload: {args.queries} queries, {args.systems} systems ({len(pairs)} pairs), "
          f"{args.resamples} permutations, metric {METRIC_GPUKIT}, gpukit device {device}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'timing':<12} {'ranx [s]':>10} {'gpukit [s]':>11} {'ranx/gpukit':>12}")
    for name, (t_ranx, t_gpukit) in timings.items():
        print(f"{name:<12} {t_ranx:>10.4f} {t_gpukit:>11.4f} {t_ranx / t_gpukit:>12.1f}")
    # Sanity: both report p-values of the same tests (ranx: count/n, gpukit: (count+1)/(n+1)).
    ours = gpukit_all_pairs(scores).p_value.tolist()
    if ranx is not None:
        print("p-values  ranx: " + ", ".join(f"{p:.4f}" for p, _ in ranx_tests_only()))
    print("        gpukit: " + ", ".join(f"{p:.4f}" for p in ours))


if __name__ == "__main__":
    main()
