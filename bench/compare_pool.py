"""Pools and coverage: gpukit.pool / gpukit.coverage against trectools.

A synthetic TREC track (``bench/gen_track.py``: graded qrels, runs of
TOPICS topics x 1000 documents written as systems write them) is read once
by each library (not timed). Stages, the two libraries alternating over
``--repeats`` rounds (paired), medians and the median of the paired ratios:

* pool: ``gpukit.pool(runs, depth=D)`` against
  ``TrecPoolMaker().make_pool(runs, strategy="topX", topX=D)``;
* coverage: judged documents in each run's top K, per query
  (``gpukit.coverage(run, qrels, depth=K).judged`` against
  ``TrecRun.check_qrel_coverage(qrels, topX=K)``), for every run.

Tied scores are spread first (by 1e-9 steps in file order, far below the
scores' printed precision): trectools orders ties by doc id ascending,
gpukit as trec_eval (doc id descending), so a tie across the cutoff would
pool another document. Every round's results are compared: the pools' (query, document) sets and
each run's per-query counts must be equal (exit 1 otherwise).

    python bench/compare_pool.py [--topics 100 --runs 10 --depth 100 --coverage-depth 10 --repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # this checkout's gpukit

import gpukit  # noqa: E402


def _untie(path: str) -> None:
    """Rewrite a run file with every score of a query distinct (see the docstring)."""
    seen: dict[tuple[str, float], int] = {}
    rows = []
    with open(path) as fh:
        for line in fh:
            q, q0, d, rank, score, tag = line.split()[:6]
            s = float(score)
            n = seen.get((q, s), 0)
            seen[(q, s)] = n + 1
            rows.append(f"{q}\t{q0}\t{d}\t{rank}\t{s - n * 1e-9!r}\t{tag}\n")
    with open(path, "w") as fh:
        fh.writelines(rows)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--depth", type=int, default=100, help="pool depth")
    p.add_argument("--coverage-depth", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    import trectools  # the anchor: an optional bench dependency

    warnings.simplefilter("ignore")  # trectools' pandas calls warn under recent pandas
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_track.py"), tmp, "--topics", str(args.topics),
                        "--runs", str(args.runs)], check=True, stdout=subprocess.DEVNULL)
        names = sorted(os.listdir(tmp))
        qrels_path = os.path.join(tmp, next(n for n in names if n.startswith("qrels")))
        run_paths = [os.path.join(tmp, n) for n in names if n.startswith("run")]
        for path in run_paths:
            _untie(path)
        g_runs = [gpukit.Run.from_trec(path) for path in run_paths]
        g_qrels = gpukit.Qrels.from_trec(qrels_path)
        t_runs = [trectools.TrecRun(path) for path in run_paths]
        t_qrels = trectools.TrecQrel(qrels_path)

    stages = {
        "pool": (lambda: gpukit.pool(g_runs, depth=args.depth),
                 lambda: trectools.TrecPoolMaker().make_pool(t_runs, strategy="topX", topX=args.depth)),
        "coverage": (lambda: [gpukit.coverage(r, g_qrels, depth=args.coverage_depth) for r in g_runs],
                     lambda: [r.check_qrel_coverage(t_qrels, topX=args.coverage_depth) for r in t_runs]),
    }
    same = {
        "pool": lambda g, t: g.to_dict() == {str(q): set(d) for q, d in t.pool.items()},
        "coverage": lambda g, t: all(c.judged.tolist() == list(x) for c, x in zip(g, t)),
    }
    print(f"{args.runs} runs x {args.topics} topics x 1000 docs; pool depth {args.depth}, coverage depth "
          f"{args.coverage_depth}; {args.repeats} paired rounds; load average {os.getloadavg()[0]:.2f}")
    print(f"{'stage':<10}{'gpukit s':>10}{'trectools s':>13}{'trectools / gpukit':>20}")
    failed = False
    for stage, (ours, theirs) in stages.items():
        g_times, t_times, ratios = [], [], []
        for _ in range(args.repeats):
            g_t, g_out = _timed(ours)
            t_t, t_out = _timed(theirs)
            g_times.append(g_t)
            t_times.append(t_t)
            ratios.append(t_t / g_t)
            if not same[stage](g_out, t_out):
                print(f"{stage}: gpukit and trectools differ", file=sys.stderr)
                failed = True
        print(f"{stage:<10}{statistics.median(g_times):>10.4f}{statistics.median(t_times):>13.4f}"
              f"{statistics.median(ratios):>20.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
