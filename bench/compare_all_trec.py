"""``-m all_trec`` at 10k queries x 1000 docs: gpukit trec_eval against pytrec_eval.

Both read the same synthetic TREC files (bench/gen_synthetic.py) and compute
trec_eval's ``all_trec`` set, each in a fresh worker process, timed from
the files to the per-query values (imports reported apart):

* gpukit       ``gpukit trec_eval -q -m all_trec QRELS RUN`` in-process
               (``gpukit.trec_eval.run_trec_eval``, output to a buffer);
* pytrec_eval  files parsed into dicts (its own ``parse_qrel`` / ``parse_run``)
               + ``RelevanceEvaluator(qrels, {"all_trec"}).evaluate(run)``.

Every per-query value both print is compared (gpukit's printed 4 decimals
against pytrec_eval's value, to half a unit of the last decimal); gm_map and
gm_bpref by their summary; iprec_at_recall and 11pt_avg are left out, since
pytrec-eval-terrier's bundled trec_eval 9 rounds recall levels differently
from trec_eval 10.0; measures only one of them has are listed. Medians over
``--repeats`` and the ratio pytrec_eval / gpukit are printed.

    python bench/compare_all_trec.py                        # 10000 x 1000, 3 repeats
    python bench/compare_all_trec.py --queries 2000 --depth 1000 --repeats 5
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)  # this checkout's gpukit, whatever is installed


def _worker_gpukit(qrels: str, run: str, repeats: int) -> dict:
    t = time.perf_counter()
    from gpukit.trec_eval import run_trec_eval

    import_s = time.perf_counter() - t
    times, text = [], ""
    for _ in range(repeats):
        out = io.StringIO()
        t0 = time.perf_counter()
        code = run_trec_eval(["-q", "-m", "all_trec", qrels, run], out=out, err=io.StringIO())
        times.append(time.perf_counter() - t0)
        assert code == 0, code
        text = out.getvalue()
    values: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        values.setdefault(name, {})[qid] = value
    return {"import_s": import_s, "times": times, "values": values}


def _worker_pytrec(qrels: str, run: str, repeats: int) -> dict:
    t = time.perf_counter()
    import pytrec_eval

    import_s = time.perf_counter() - t
    times, result = [], {}
    for _ in range(repeats):
        t0 = time.perf_counter()
        with open(qrels) as f:
            judged = pytrec_eval.parse_qrel(f)
        with open(run) as f:
            ranked = pytrec_eval.parse_run(f)
        result = pytrec_eval.RelevanceEvaluator(judged, {"all_trec"}).evaluate(ranked)
        times.append(time.perf_counter() - t0)
    values: dict[str, dict[str, float]] = {}
    for qid, measures in result.items():
        for name, value in measures.items():
            values.setdefault(name, {})[qid] = value
    return {"import_s": import_s, "times": times, "values": values, "version": _version("pytrec-eval-terrier")}


def _version(dist: str) -> str:
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "?"


WORKERS = {"gpukit": _worker_gpukit, "pytrec_eval": _worker_pytrec}


def _spawn(tool: str, qrels: str, run: str, repeats: int) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        subprocess.run([sys.executable, __file__, "--worker", tool, qrels, run, str(repeats), out], check=True)
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


#: trec_eval prints these only as a summary: compared as exp of the mean of
#: pytrec_eval's per-query values, which are trec_eval's log(max(v, 1e-5)).
SUMMARY_ONLY = ("gm_map", "gm_bpref")
#: pytrec-eval-terrier bundles trec_eval 9, which turns a recall level into a
#: rank with (long)(level * R + 0.9); trec_eval 10.0 (gpukit's target, whose
#: own expected outputs the tests diff against) rounds: lround(level * R).
VERSION_DIFFERENT = ("iprec_at_recall", "11pt_avg")


def _compare(gk: dict, pt: dict) -> tuple[int, list[str], list[str], list[str]]:
    """(values compared, disagreements, gpukit-only names, pytrec-only names)."""
    # pytrec_eval names its per-query keys like trec_eval's output with "_" (P_5, ndcg_cut_10).
    compared, bad = 0, []
    for name in SUMMARY_ONLY:
        values = list(pt["values"].get(name, {}).values())
        if values and name in gk["values"]:
            want = math.exp(sum(values) / len(values))
            got = float(gk["values"][name]["all"])
            compared += 1
            if abs(got - want) > 0.5e-4 + 1e-9:
                bad.append(f"{name} all: gpukit {got} pytrec_eval {want:.6f}")
    for name, per_query in pt["values"].items():
        mine = gk["values"].get(name)
        if mine is None or name in ("runid", "relstring", "num_q") + SUMMARY_ONLY:  # strings; summary lines
            continue
        if name.startswith(VERSION_DIFFERENT):
            continue
        for qid, value in per_query.items():
            if qid not in mine:
                bad.append(f"{name} {qid}: missing in gpukit")
                continue
            got = float(mine[qid])
            if abs(got - value) > 0.5e-4 + 1e-9:
                bad.append(f"{name} {qid}: gpukit {mine[qid]} pytrec_eval {value:.6f}")
            compared += 1
    only_gk = sorted(set(gk["values"]) - set(pt["values"]) - {"runid", "num_q"})
    only_pt = sorted(set(pt["values"]) - set(gk["values"]))
    return compared, bad, only_gk, only_pt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--depth", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", default=None, help="where the synthetic files go (default: a temporary directory)")
    args = p.parse_args()
    from gen_synthetic import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_synthetic(args.dir or tmp, args.queries, args.depth, seed=0)
        results = {tool: _spawn(tool, qrels, run, args.repeats) for tool in WORKERS}
    compared, bad, only_gk, only_pt = _compare(results["gpukit"], results["pytrec_eval"])
    print(f"-m all_trec, {args.queries} queries x {args.depth} docs, {args.repeats} repeats, "
          f"pytrec-eval-terrier {results['pytrec_eval']['version']}")
    medians = {tool: statistics.median(r["times"]) for tool, r in results.items()}
    for tool, r in results.items():
        print(f"  {tool:<12} median {medians[tool]:8.3f} s  (min {min(r['times']):.3f}, max {max(r['times']):.3f}; import {r['import_s']:.2f} s)")
    print(f"  ratio pytrec_eval / gpukit: {medians['pytrec_eval'] / medians['gpukit']:.2f}x")
    print(f"  per-query values compared: {compared}; disagreements: {len(bad)}")
    by_name: dict[str, int] = {}
    for line in bad:
        by_name[line.split(" ")[0]] = by_name.get(line.split(" ")[0], 0) + 1
    print(f"  disagreeing measures: {by_name}")
    for line in bad[:20]:
        print("    " + line)
    print(f"  not compared (trec_eval 9 in pytrec_eval vs 10.0 level rounding): {', '.join(VERSION_DIFFERENT)}")
    print(f"  only gpukit prints: {', '.join(only_gk) or '-'}")
    print(f"  only pytrec_eval has: {', '.join(only_pt) or '-'}")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        tool, qrels_path, run_path, repeats, out_path = sys.argv[2:7]
        with open(out_path, "w") as fh:
            json.dump(WORKERS[tool](qrels_path, run_path, int(repeats)), fh)
    else:
        main()
