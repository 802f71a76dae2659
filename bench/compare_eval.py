"""gpukit end to end (TREC files -> report) against the usual evaluators, in one run.

On the same files and the same measures (nDCG@10, P@10, R@100, RR@10, AP,
Rprec), each tool is timed in its own fresh worker process (so memory and JIT
state do not leak between tools; import time is reported apart):

* gpukit        ``Qrels.from_trec`` + ``Run.from_trec`` + ``evaluate(convention="trec_eval")``
* gpukit CLI    ``gpukit eval`` as a subprocess, interpreter start-up and imports included
                (gpukit's modules byte-compiled first, as ``pip install`` leaves them: a
                checkout run with PYTHONDONTWRITEBYTECODE=1 would recompile them in every process)
* pytrec_eval   files parsed in Python into dicts + ``RelevanceEvaluator.evaluate`` + mean.
                pytrec_eval has no RR cut-off: ``recip_rank`` is timed; RR@10 is checked
                (untimed) on the run cut to trec_eval's top 10
* ranx          ``Qrels.from_file`` / ``Run.from_file`` + ``evaluate(make_comparable=True)``;
                cold = first call in the fresh process (numba JIT, or its on-disk cache),
                warm = later calls
* ir_measures   ``read_trec_qrels`` / ``read_trec_run`` + ``calc_aggregate``
* trec_eval     the binary given by ``--trec-eval``, or ``trec_eval`` on PATH

gpukit (trec_eval convention) must agree with pytrec_eval to 1e-6 on every
measure; the other tools' differences are reported. Medians over
``--repeats`` and the ratios "tool time / gpukit time" are printed. Also:

* kernel-only throughput from tensors (``Run.from_topk`` + ``Qrels.from_arrays``;
  queries/s for the six measures at K=100) on CPU, and on CUDA when available:
  ``evaluate`` (form ranking + kernels) and the kernels alone;
* run-file parsing: gpukit's pyarrow reader against pandas' C engine
  (``read_csv(sep=" ")`` and ``sep=r"\\s+"``), text only and with integer ids
  (``factorize``), the evidence for the parser choice.

Data: synthetic ``--sizes QxK,...`` (bench/gen_synthetic.py, written to a
temporary directory), the CACM fixture (tests/data/cacm) and TREC DL 2019
passage qrels with a synthesised run (judged + random docs; DL ships no run).

    python bench/compare_eval.py                                   # 10000x100 + fixtures, ~5 min
    python bench/compare_eval.py --sizes 10000x100,100000x100 --repeats 3 --json out.json
"""
from __future__ import annotations

import argparse
import gc
import importlib.metadata as md
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
PYTREC = {"ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recall_100": "R@100", "recip_rank": "RR", "map": "AP", "Rprec": "Rprec"}
RANX = {"ndcg@10": "nDCG@10", "precision@10": "P@10", "recall@100": "R@100", "mrr@10": "RR@10", "map": "AP", "r-precision": "Rprec"}
CACM = (os.path.join(REPO, "tests/data/cacm/qrels.cacm.txt"), os.path.join(REPO, "tests/data/cacm/run.cacm-bm25.anserini.txt"))
DL19_QRELS = "/work/shared/data/trec_dl_qrels/qrels.dl19-passage.txt"
TOLERANCE = 1e-6
TREC_EVAL_TOLERANCE = 5e-5 + 1e-9


# ----------------------------------------------------------------- workers
# Each worker runs in a fresh interpreter: python compare_eval.py --worker TOOL QRELS RUN REPEATS
def _worker_gpukit(qrels_path, run_path, repeats):
    t = time.perf_counter()
    import gpukit
    from gpukit.judgments.qrels import Qrels
    from gpukit.data.run import Run

    import_s = time.perf_counter() - t
    times, stages = [], []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        qrels = Qrels.from_trec(qrels_path)
        t1 = time.perf_counter()
        run = Run.from_trec(run_path)
        t2 = time.perf_counter()
        report = gpukit.evaluate(qrels, run, MEASURES + ["RR"], convention="trec_eval")
        t3 = time.perf_counter()
        times.append(t3 - t0)
        stages.append({"qrels": t1 - t0, "run": t2 - t1, "evaluate": t3 - t2})
        means = {m: report[m].mean for m in MEASURES + ["RR"]}
        del qrels, run, report
    stage_medians = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    return {"import_s": import_s, "times": times, "means": means, "stages": stage_medians}


def _read_trec_dicts(qrels_path, run_path):
    qrels: dict = {}
    with open(qrels_path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 4 and not parts[0].startswith("#"):
                qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    run: dict = {}
    with open(run_path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 6:
                run.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return qrels, run


def _worker_pytrec_eval(qrels_path, run_path, repeats):
    t = time.perf_counter()
    import pytrec_eval

    import_s = time.perf_counter() - t
    times, stages = [], []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        qrels, run = _read_trec_dicts(qrels_path, run_path)
        t1 = time.perf_counter()
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map", "Rprec"})
        per_query = evaluator.evaluate(run)
        means = {PYTREC[k]: statistics.fmean(v[k] for v in per_query.values()) for k in PYTREC}
        t2 = time.perf_counter()
        times.append(t2 - t0)
        stages.append({"parse": t1 - t0, "evaluate": t2 - t1})
    # Untimed: RR@10 = recip_rank on the run cut to trec_eval's top 10 (score desc, docno desc).
    top10 = {q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:10]) for q, docs in run.items()}
    rr10 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    means["RR@10"] = statistics.fmean(v["recip_rank"] for v in rr10.values())
    stage_medians = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    return {"import_s": import_s, "times": times, "means": means, "stages": stage_medians}


def _worker_ranx(qrels_path, run_path, repeats):
    t = time.perf_counter()
    from ranx import Qrels, Run, evaluate

    import_s = time.perf_counter() - t
    times = []
    for _ in range(max(repeats, 2)):  # first = cold (JIT or its cache), the rest warm
        gc.collect()
        t0 = time.perf_counter()
        qrels = Qrels.from_file(qrels_path, kind="trec")
        run = Run.from_file(run_path, kind="trec")
        scores = evaluate(qrels, run, list(RANX), make_comparable=True)
        times.append(time.perf_counter() - t0)
        means = {RANX[k]: float(v) for k, v in scores.items()}
        del qrels, run
    return {"import_s": import_s, "times": times, "cold_s": times[0], "means": means}


def _worker_ir_measures(qrels_path, run_path, repeats):
    t = time.perf_counter()
    import ir_measures
    from ir_measures import AP, RR, P, R, Rprec, nDCG

    import_s = time.perf_counter() - t
    measures = [nDCG @ 10, P @ 10, R @ 100, RR @ 10, AP, Rprec]
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        result = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(qrels_path), ir_measures.read_trec_run(run_path))
        times.append(time.perf_counter() - t0)
        means = {str(k): float(v) for k, v in result.items()}
    return {"import_s": import_s, "times": times, "means": means}


WORKERS = {"gpukit": _worker_gpukit, "pytrec_eval": _worker_pytrec_eval, "ranx": _worker_ranx, "ir_measures": _worker_ir_measures}


def run_worker(tool, qrels_path, run_path, repeats):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", tool, qrels_path, run_path, str(repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_cli(qrels_path, run_path, repeats):
    import compileall

    import gpukit

    compileall.compile_dir(os.path.dirname(gpukit.__file__), quiet=1)  # read, not written, by PYTHONDONTWRITEBYTECODE=1
    cmd = [sys.executable, "-m", "gpukit.cli", "eval", qrels_path, run_path, "--convention", "trec_eval", "--format", "json"]
    for m in MEASURES:
        cmd += ["-m", m]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()}
    return {"times": times, "command": " ".join(["gpukit"] + cmd[3:])}


def run_trec_eval(binary, qrels_path, run_path, repeats):
    if binary is None:
        return None
    cmd = [binary, "-m", "ndcg_cut.10", "-m", "P.10", "-m", "recall.100", "-m", "recip_rank", "-m", "map", "-m", "Rprec", qrels_path, run_path]
    times, out = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        times.append(time.perf_counter() - t0)
    names = {"ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recall_100": "R@100", "recip_rank": "RR", "map": "AP", "Rprec": "Rprec"}
    means = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all" and parts[0] in names:
            means[names[parts[0]]] = float(parts[2])
    return {"times": times, "means": means}


# ------------------------------------------------------------- parsing only
def parser_comparison(run_path, repeats):
    """Parse a run (text only, then with integer ids), gpukit's reader against pandas' C engine."""
    import pandas as pd

    from gpukit.io.doc_space import doc_keys
    from gpukit.data.run import TREC_RUN_COLUMNS
    from gpukit.io.string_coding import string_codes
    from gpukit.io.text_table import read_table

    def arrow_read():
        return read_table(run_path, TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)

    def gpukit_ids():
        table = arrow_read()
        scores = table.columns.pop("score").to_numpy()
        return string_codes(table.columns.pop("query_id")), doc_keys(table.columns.pop("doc_id")), scores

    def pandas_read(sep):
        return pd.read_csv(run_path, sep=sep, header=None, usecols=[0, 2, 4], names=["q", "q0", "d", "r", "s", "t"],
                           dtype={"q": str, "d": str, "s": "float64"}, engine="c")

    def pandas_ids(sep):
        def parse():
            df = pandas_read(sep)
            return pd.factorize(df["q"], sort=True), pd.factorize(df["d"], sort=True), df["s"].to_numpy()
        return parse

    out = {}
    for name, fn in [("gpukit reader (pyarrow blocks), text only", arrow_read),
                     ("gpukit reader + query codes + doc keys", gpukit_ids),
                     ("pandas C engine sep=' ', text only", lambda: pandas_read(" ")),
                     ("pandas C engine sep=' ' + factorize", pandas_ids(" ")),
                     ("pandas C engine sep=\\s+ + factorize", pandas_ids(r"\s+"))]:
        times = []
        for _ in range(repeats):
            gc.collect()
            t0 = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t0)
            del result
        out[name] = statistics.median(times)
    return out


# --------------------------------------------------------- kernel throughput
def kernel_throughput(n_queries, depth, device_name, repeats):
    import numpy as np
    import torch

    from gpukit.judgments.qrels import Qrels
    from gpukit.data.run import Run
    from gpukit.evaluation import compute_measures, evaluate
    from gpukit.measures import parse_measures
    from gpukit.ranking import form_ranking

    device = torch.device(device_name)
    gen = torch.Generator().manual_seed(0)
    n_docs = max(100_000, n_queries * depth // 4)
    stride = n_docs // (depth + 10)
    base = torch.randint(0, n_docs, (n_queries, 1), generator=gen)
    docs = (base + torch.arange(depth)[None, :] * stride) % n_docs
    scores = torch.rand(n_queries, depth, generator=gen, dtype=torch.float64)
    query_ids = [f"q{i}" for i in range(n_queries)]
    doc_ids = [f"d{i}" for i in range(n_docs)]
    run = Run.from_topk(scores, docs, query_ids, doc_ids, name="bench").to(device)
    judged = torch.cat([docs[:, :10], (base + torch.arange(depth, depth + 10)[None, :] * stride) % n_docs], dim=1)
    qrels = Qrels.from_arrays(
        np.repeat(np.array(query_ids, dtype=object), judged.shape[1]),
        np.array(doc_ids, dtype=object)[judged.reshape(-1).numpy()],
        torch.randint(0, 4, (judged.numel(),), generator=gen).numpy(),
    )
    parsed = parse_measures(MEASURES)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    evaluate(qrels, run, parsed, convention="trec_eval")  # warm-up
    t_eval, t_kern = [], []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        evaluate(qrels, run, parsed, convention="trec_eval")
        sync()
        t_eval.append(time.perf_counter() - t0)
        ranking = form_ranking(qrels, run, complete=False)
        sync()
        t0 = time.perf_counter()
        compute_measures(ranking, parsed)
        sync()
        t_kern.append(time.perf_counter() - t0)
    e, k = statistics.median(t_eval), statistics.median(t_kern)
    return {"queries": n_queries, "depth": depth, "device": str(device), "evaluate_s": e, "kernels_s": k,
            "evaluate_qps": n_queries / e, "kernels_qps": n_queries / k}


# ------------------------------------------------------------------- driver
def versions(trec_eval=None):
    out = {"python": platform.python_version(), "machine": f"{os.cpu_count()} CPUs, {platform.machine()}"}
    for dist in ("torch", "numpy", "pyarrow", "pandas", "pytrec-eval-terrier", "ranx", "ir-measures", "numba"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    try:
        with open("/proc/meminfo") as fh:
            out["memory_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    if trec_eval:
        head = subprocess.run([trec_eval, "-v"], capture_output=True, text=True)
        out["trec_eval"] = f"{trec_eval}: {(head.stdout + head.stderr).strip().splitlines()[0]}"
    else:
        out["trec_eval"] = None
    return out


def datasets(sizes, workdir, fixtures):
    from gen_synthetic import write_run_over_qrels, write_synthetic

    out = []
    for spec in sizes:
        q, k = (int(x) for x in spec.lower().split("x"))
        qrels, run = write_synthetic(workdir, q, k, seed=0)
        out.append((f"synthetic {q}x{k}", qrels, run))
    if fixtures:
        if all(os.path.exists(p) for p in CACM):
            out.append(("CACM (BM25, Anserini)", *CACM))
        if os.path.exists(DL19_QRELS):
            out.append(("TREC DL19 passage qrels + synthetic run (1000/query)", DL19_QRELS, write_run_over_qrels(workdir, DL19_QRELS, 1000)))
    return out


def compare(name, qrels, run, tools, repeats, trec_eval=None):
    print(f"\n== {name}", flush=True)
    res = {"qrels": qrels, "run": run}
    res["gpukit"] = run_worker("gpukit", qrels, run, repeats)
    res["gpukit_cli"] = run_cli(qrels, run, repeats)
    for tool in tools:
        res[tool] = run_worker(tool, qrels, run, repeats)
    te = run_trec_eval(trec_eval, qrels, run, repeats)
    if te is not None:
        res["trec_eval"] = te
    if "error" in res["gpukit"]:
        # No baseline, no ratios: say why instead of failing on a missing key.
        print(f"  gpukit         error: {res['gpukit']['error']}")
        return res
    base = statistics.median(res["gpukit"]["times"])
    ref = res["gpukit"]["means"]
    rows = []
    for tool in ["gpukit", "gpukit_cli"] + tools + (["trec_eval"] if te else []):
        r = res[tool]
        if "error" in r:
            print(f"  {tool:14s} error: {r['error']}")
            continue
        times = r["times"][1:] if tool == "ranx" else r["times"]
        med = statistics.median(times)
        r["median_s"] = med
        r["ratio_vs_gpukit"] = med / base
        deltas = {}
        for m, v in r.get("means", {}).items():
            key = m if m in ref else None
            if key is not None and v is not None:
                deltas[m] = v - ref[key]
        r["delta_vs_gpukit"] = deltas
        extra = f"  cold {r['cold_s']:.2f}s ({r['cold_s'] / base:.1f}x)" if tool == "ranx" else ""
        worst = max((abs(d) for d in deltas.values()), default=0.0)
        rss = f"  peak RSS {r['peak_rss_gib']:.2f} GiB" if "peak_rss_gib" in r else ""
        rows.append(f"  {tool:14s} {med:9.3f} s  {med / base:7.1f}x{extra}  max|delta| {worst:.2e}{rss}")
    print("\n".join(rows))
    if "pytrec_eval" in res and "error" not in res["pytrec_eval"]:
        bad = {m: d for m, d in res["pytrec_eval"]["delta_vs_gpukit"].items() if abs(d) > TOLERANCE}
        res["agrees_with_pytrec_eval"] = not bad
        print("  gpukit vs pytrec_eval: " + ("agree to 1e-6 on " + ", ".join(res["pytrec_eval"]["delta_vs_gpukit"]) if not bad else f"DISAGREE {bad}"))
    if "trec_eval" in res and "error" not in res["trec_eval"]:
        # trec_eval prints four decimals: agreement means within half a unit of the last one.
        bad = {m: d for m, d in res["trec_eval"]["delta_vs_gpukit"].items() if abs(d) > TREC_EVAL_TOLERANCE}
        res["agrees_with_trec_eval"] = not bad
        print("  gpukit vs trec_eval binary: " + ("agree to its 4 printed decimals on " + ", ".join(res["trec_eval"]["delta_vs_gpukit"]) if not bad else f"DISAGREE {bad}"))
    print(f"  gpukit stages (median s): {json.dumps({k: round(v, 3) for k, v in res['gpukit']['stages'].items()})}")
    return res


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        tool, qrels, run, repeats = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        result = WORKERS[tool](qrels, run, repeats)
        # Linux reports ru_maxrss in KiB: the worker's peak resident memory, imports included.
        result["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(json.dumps(result))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--sizes", default="10000x100", help="synthetic QxK sizes, comma separated (default 10000x100)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tools", default="pytrec_eval,ranx,ir_measures", help="anchors to run (default: all)")
    ap.add_argument("--no-fixtures", action="store_true", help="skip CACM and TREC DL19")
    ap.add_argument("--kernel-queries", type=int, default=100_000, help="queries for the kernel-only throughput (0: skip)")
    ap.add_argument("--parser-size", default=None, help="QxK synthetic run for the parser comparison (default: the largest size; none: skip it)")
    ap.add_argument("--dir", default=None, help="where to write synthetic files (default: a temporary directory, removed)")
    ap.add_argument("--json", default=None, help="write all results to this file")
    ap.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary (default: trec_eval on PATH, if any)")
    args = ap.parse_args()

    workdir = args.dir or tempfile.mkdtemp(prefix="gpukit-compare-")
    sizes = [s for s in args.sizes.split(",") if s]
    tools = [t for t in args.tools.split(",") if t]
    trec_eval = os.path.abspath(args.trec_eval) if args.trec_eval else None
    out = {"date": time.strftime("%Y-%m-%d"), "versions": versions(trec_eval), "command": " ".join(["python", "bench/compare_eval.py"] + sys.argv[1:]),
           "measures": MEASURES, "repeats": args.repeats, "datasets": {}}
    print(json.dumps(out["versions"]))
    try:
        for name, qrels, run in datasets(sizes, workdir, not args.no_fixtures):
            out["datasets"][name] = compare(name, qrels, run, tools, args.repeats, trec_eval)
        if sizes and (args.parser_size or "").lower() != "none":
            from gen_synthetic import write_synthetic

            spec = args.parser_size or max(sizes, key=lambda s: int(s.lower().split("x")[0]) * int(s.lower().split("x")[1]))
            q, k = (int(x) for x in spec.lower().split("x"))
            _, run = write_synthetic(workdir, q, k, seed=0)
            print(f"\n== parsing a {spec} run (median s)")
            out["parsers"] = {"size": spec, "median_s": parser_comparison(run, args.repeats)}
            for name, secs in out["parsers"]["median_s"].items():
                print(f"  {name:40s} {secs:8.3f}")
        if args.kernel_queries:
            import torch

            out["kernels"] = []
            devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
            print(f"\n== kernel-only throughput, {args.kernel_queries} queries x K=100, six measures")
            for dev in devices:
                k = kernel_throughput(args.kernel_queries, 100, dev, max(args.repeats, 3))
                out["kernels"].append(k)
                print(f"  {dev:5s} evaluate (ranking + kernels) {k['evaluate_qps'] / 1e6:6.3f} M q/s   kernels only {k['kernels_qps'] / 1e6:6.3f} M q/s")
    finally:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=1)
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
