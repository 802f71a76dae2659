"""Peak memory and time of ``gpukit eval`` on lopsided inputs.

Three inputs where padding every query to the deepest ranking (or every
topic to the most judgments) would ask for far more memory than the input:

* ``wide_run``: 20,000 one-document queries plus one query of 200,000
  documents (a 6.3 MB run; padded: 20,001 x 200,000).
* ``wide_qrels``: 20,000 topics of one judgment plus one of 200,000
  (a 3.4 MB qrels; padded ideal table: 20,001 x 200,000), against a run of
  10 documents per topic.
* ``deep_query``: 1,200 queries of 100 documents plus one of 100,000
  (a 7.7 MB run).

Each is compared with a uniform input of the same numbers of run and qrels
lines (2,200 queries of 100 documents, judgments spread evenly), and with
pytrec_eval on the same files when it is installed. Every evaluation runs in
a fresh subprocess; its peak resident set size is the child's
``ru_maxrss``. Files go to a temporary directory (never the repository).
Prints one JSON line per (case, tool).

    python bench/bench_lopsided.py                 # every case, full size
    python bench/bench_lopsided.py --case wide_run --scale 0.1
    python bench/bench_lopsided.py --keep DIR      # keep the files (DIR/<case>-<input>/)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURES = ["P@10", "nDCG@10", "AP", "RR", "R@1000"]
PYTREC_MEASURES = {"P_10", "ndcg_cut_10", "map", "recip_rank", "recall_1000"}


def _lengths(case: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(run lengths per query, judgments per topic) of a case; topic i is query i."""
    s = lambda n: max(1, int(n * scale))  # noqa: E731
    if case == "wide_run":
        run = np.append(np.ones(s(20_000), np.int64), s(200_000))
        return run, np.append(np.ones(s(20_000), np.int64), s(100))
    if case == "wide_qrels":
        run = np.full(s(20_000) + 1, 10, np.int64)
        return run, np.append(np.ones(s(20_000), np.int64), s(200_000))
    if case == "deep_query":
        run = np.append(np.full(s(1_200), 100, np.int64), s(100_000))
        return run, np.full(s(1_200) + 1, 10, np.int64)
    raise SystemExit(f"unknown case {case!r}")


def uniform_like(run: np.ndarray, qrels: np.ndarray, depth: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """The same numbers of run and qrels lines, over equally deep queries."""
    n_q = max(1, int(run.sum()) // depth)
    run_u = np.full(n_q, int(run.sum()) // n_q, np.int64)
    run_u[: int(run.sum()) - int(run_u.sum())] += 1
    qrels_u = np.full(n_q, int(qrels.sum()) // n_q, np.int64)
    qrels_u[: int(qrels.sum()) - int(qrels_u.sum())] += 1
    return run_u, qrels_u


def write_files(directory: str, run_lengths: np.ndarray, qrels_lengths: np.ndarray, seed: int = 0) -> tuple[str, str]:
    """TREC run and qrels files: query i retrieves docs ``d0..`` with
    distinct descending scores; topic i judges docs at random ranks of its
    ranking (and beyond it), grades 0..2."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = os.path.join(directory, "run.txt"), os.path.join(directory, "qrels.txt")
    with open(run_path, "w") as f:
        for q, n in enumerate(run_lengths.tolist()):
            ranks = np.arange(n)
            f.write("".join(f"q{q} Q0 d{r} {r + 1} {n - r} tag\n" for r in ranks.tolist()))
    with open(qrels_path, "w") as f:
        for q, n in enumerate(qrels_lengths.tolist()):
            docs = rng.choice(max(2 * n, int(run_lengths[q]) if q < len(run_lengths) else 0, 1), size=n, replace=False)
            grades = rng.integers(0, 3, n)
            f.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(docs.tolist(), grades.tolist())))
    return qrels_path, run_path


_PYTREC = """
import sys, time, pytrec_eval
t = time.perf_counter()
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
res = pytrec_eval.RelevanceEvaluator(qrels, set(sys.argv[3].split(","))).evaluate(run)
print(len(res), time.perf_counter() - t)
"""


def run_one(cmd: list[str]) -> dict:
    """Wall seconds and peak RSS (MiB) of ``cmd``, run from a fresh child so
    that the child's RUSAGE_CHILDREN peak is this command's alone."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(json.dumps({'rc': p.returncode, 'wall_s': round(time.perf_counter() - t, 3),\n"
        "  'peak_mib': round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),\n"
        "  'err': p.stderr.strip().splitlines()[-1:] }))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=["wide_run", "wide_qrels", "deep_query"], action="append")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every count (a quicker smaller check)")
    ap.add_argument("--no-pytrec", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write the files under DIR/<case>-<input>/ and keep them")
    args = ap.parse_args()
    gpukit_cmd = [sys.executable, "-m", "gpukit.cli", "eval"]
    workdir = args.keep or tempfile.mkdtemp(prefix="gpukit-lopsided-")
    try:
        for case in args.case or ["wide_run", "wide_qrels", "deep_query"]:
            run_l, qrels_l = _lengths(case, args.scale)
            for kind, (r, q) in (("lopsided", (run_l, qrels_l)), ("uniform", uniform_like(run_l, qrels_l))):
                d = os.path.join(workdir, f"{case}-{kind}")
                os.makedirs(d, exist_ok=True)
                qrels_path, run_path = write_files(d, r, q)
                sizes = {"run_mb": round(os.path.getsize(run_path) / 1e6, 2), "qrels_mb": round(os.path.getsize(qrels_path) / 1e6, 2)}
                base = {"case": case, "input": kind, "run_lines": int(r.sum()), "qrels_lines": int(q.sum()), **sizes}
                cmd = gpukit_cmd + [qrels_path, run_path] + [a for m in MEASURES for a in ("-m", m)]
                print(json.dumps({**base, "tool": "gpukit eval", **run_one(cmd)}), flush=True)
                if not args.no_pytrec:
                    cmd = [sys.executable, "-c", _PYTREC, qrels_path, run_path, ",".join(sorted(PYTREC_MEASURES))]
                    print(json.dumps({**base, "tool": "pytrec_eval", **run_one(cmd)}), flush=True)
                if not args.keep:
                    shutil.rmtree(d)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    raise SystemExit(main())
