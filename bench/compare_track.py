"""The everyday case: a TREC track's qrels and runs, file -> means, gpukit against pytrec_eval.

One process, the same six measures as bench/compare_eval.py (nDCG@10, P@10,
R@100, RR@10, AP, Rprec; pytrec_eval is timed with ``recip_rank``, RR@10 is
checked untimed on the runs cut to trec_eval's top 10), trec_eval convention:

* gpukit       ``gpukit.read_trec_files(qrels, runs)``, then per run
               ``evaluate``, as ``gpukit eval QRELS RUN1 ... RUNn`` does (the
               qrels' derived data is reused across runs);
* pytrec_eval  ``pytrec_eval.parse_qrel`` + one ``RelevanceEvaluator``, then per
               run ``pytrec_eval.parse_run`` + ``evaluate`` + the means.

Both tools' imports are done before timing. The two alternate, ``--repeats``
times, and medians plus the ratio pytrec_eval / gpukit are printed; every
mean must agree to 1e-6 (the script exits 1 otherwise). Data: the synthetic
track of bench/gen_track.py (100 and 250 topics x 1,000 docs, 1 and 20 runs,
plain and gzipped), the CACM fixture (tests/data/cacm) and TREC DL 2019
passage qrels with a synthesised run (bench/gen_synthetic.py).

    python bench/compare_track.py --dir /tmp/gk-track --repeats 5
    python bench/compare_track.py --topics none --repeats 21   # CACM and TREC DL only
"""
from __future__ import annotations

import argparse
import gc
import gzip
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, HERE]  # this checkout's gpukit, then the generators

import pytrec_eval  # noqa: E402
from gen_synthetic import write_run_over_qrels  # noqa: E402
from gen_track import write_track  # noqa: E402

import gpukit  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402

MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
PYTREC = {"ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recall_100": "R@100", "map": "AP", "Rprec": "Rprec"}
CACM = (os.path.join(REPO, "tests/data/cacm/qrels.cacm.txt"), [os.path.join(REPO, "tests/data/cacm/run.cacm-bm25.anserini.txt")])
DL19_QRELS = "/work/shared/data/trec_dl_qrels/qrels.dl19-passage.txt"
TOLERANCE = 1e-6


def gpukit_means(qrels_path: str, run_paths: list[str]) -> list[dict[str, float]]:
    """``gpukit.read_trec_files`` (as ``gpukit eval`` reads its files) + ``evaluate``."""
    parsed = parse_measures(MEASURES)
    qrels, runs = gpukit.read_trec_files(qrels_path, run_paths)
    out = []
    for run in runs:
        report = gpukit.evaluate(qrels, run, parsed, convention="trec_eval")
        out.append({m: report[m].mean for m in MEASURES})
    return out


def _text(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def pytrec_means(qrels_path: str, run_paths: list[str]) -> list[dict[str, float]]:
    with _text(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map", "Rprec"})
    out = []
    for path in run_paths:
        with _text(path) as fh:
            run = pytrec_eval.parse_run(fh)
        per_query = evaluator.evaluate(run).values()
        means = {ours: statistics.fmean(v[name] for v in per_query) for name, ours in PYTREC.items()}
        means["RR"] = statistics.fmean(v["recip_rank"] for v in per_query)
        out.append(means)
    return out


def pytrec_rr10(qrels_path: str, run_path: str) -> float:
    """RR@10 by pytrec_eval: recip_rank of the run cut to trec_eval's top 10 (score desc, docno desc)."""
    with _text(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with _text(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    top10 = {q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:10]) for q, docs in run.items()}
    values = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10).values()
    return statistics.fmean(v["recip_rank"] for v in values)


def compare(name: str, qrels_path: str, run_paths: list[str], repeats: int) -> tuple[float, float, float]:
    """(gpukit median s, pytrec_eval median s, largest mean difference); the
    two alternate, first round dropped."""
    times: dict[str, list[float]] = {"gpukit": [], "pytrec_eval": []}
    results = {}
    for _ in range(repeats + 1):
        for tool, fn in (("gpukit", gpukit_means), ("pytrec_eval", pytrec_means)):
            gc.collect()
            t0 = time.perf_counter()
            results[tool] = fn(qrels_path, run_paths)
            times[tool].append(time.perf_counter() - t0)
    worst = 0.0
    for ours, theirs in zip(results["gpukit"], results["pytrec_eval"]):
        for measure in PYTREC.values():
            worst = max(worst, abs(ours[measure] - theirs[measure]))
    # RR@10 on the first run only (the check parses the run twice more, untimed).
    worst = max(worst, abs(results["gpukit"][0]["RR@10"] - pytrec_rr10(qrels_path, run_paths[0])))
    return statistics.median(times["gpukit"][1:]), statistics.median(times["pytrec_eval"][1:]), worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="where the synthetic files go (default: a temporary directory)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--topics", default="100,250", help="comma-separated topic counts of the synthetic track ('none': only the fixtures)")
    ap.add_argument("--runs", default="1,20", help="comma-separated numbers of runs evaluated in one process")
    ap.add_argument("--no-fixtures", action="store_true", help="skip CACM and TREC DL")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="gk-track-")
    cases = []
    n_runs = [int(x) for x in args.runs.split(",")]
    for topics in (int(x) for x in args.topics.split(",") if args.topics != "none"):
        for gz in (False, True):
            qrels_path, run_paths = write_track(os.path.join(workdir, "gz" if gz else "plain"), topics, max(n_runs), gzip_runs=gz)
            for n in n_runs:
                cases.append((f"track {topics} topics x 1000, {n} run{'s' * (n > 1)}{', gzipped' if gz else ''}", qrels_path, run_paths[:n]))
    if not args.no_fixtures:
        cases.append(("CACM BM25 (Anserini)", *CACM))
        if os.path.exists(DL19_QRELS):
            cases.append(("TREC DL19 passage + synthetic 1000/query run", DL19_QRELS, [write_run_over_qrels(workdir, DL19_QRELS)]))
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'data':<48} {'gpukit s':>9} {'pytrec_eval s':>14} {'ratio':>7} {'max |diff|':>11}")
    failed = False
    for name, qrels_path, run_paths in cases:
        ours, theirs, worst = compare(name, qrels_path, run_paths, args.repeats)
        failed |= worst > TOLERANCE
        print(f"{name:<48} {ours:9.4f} {theirs:14.4f} {theirs / ours:7.2f} {worst:11.2e}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    if failed:
        print(f"means differ from pytrec_eval by more than {TOLERANCE}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
