"""Peak host memory of ``gpukit eval`` on a 1M-query x 100-doc run.

Writes a synthetic run (1M queries x 100 docs = 100M lines, about 4 GB; or
gzip with ``--gzip``) and its qrels (~20 judgments per query) into a
temporary directory (never the repository), runs ``gpukit eval`` on them in a
subprocess, and reports the child's peak resident set size
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``) and wall time against the
8 GiB target. Prints one JSON line (and writes it to ``--json`` if given).

    python bench/memory_1m.py                     # 1M x 100, plain text
    python bench/memory_1m.py --gzip --keep DIR   # gzip run, keep the files in DIR
    python bench/memory_1m.py --queries 100000    # a quicker smaller check
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_synthetic import write_synthetic  # noqa: E402

TARGET_GIB = 8.0
MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true", help="gzip the run file (slower to write and read)")
    ap.add_argument("--keep", metavar="DIR", help="write (or reuse) the files in DIR and keep them")
    ap.add_argument("--json", metavar="FILE", help="also write the result line to FILE")
    args = ap.parse_args()

    workdir = args.keep or tempfile.mkdtemp(prefix="gpukit-mem-")
    try:
        t0 = time.perf_counter()
        qrels, run = write_synthetic(workdir, args.queries, args.depth, args.seed, gzip_run=args.gzip)
        gen_s = time.perf_counter() - t0
        cmd = [sys.executable, "-m", "gpukit.cli", "eval", qrels, run, "--format", "json"]
        for m in MEASURES:
            cmd += ["-m", m]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        report = json.loads(proc.stdout.splitlines()[0])
        peak_gib = peak_kib / 2**20
        result = {
            "queries": args.queries,
            "depth": args.depth,
            "lines": args.queries * args.depth,
            "run_bytes": os.path.getsize(run),
            "gzip": args.gzip,
            "generate_s": round(gen_s, 1),
            "eval_wall_s": round(wall, 1),
            "peak_rss_gib": round(peak_gib, 2),
            "target_gib": TARGET_GIB,
            "within_target": peak_gib <= TARGET_GIB,
            "means": {k: round(v["mean"], 6) for k, v in report["measures"].items()},
            "command": " ".join(["gpukit"] + cmd[3:]),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        }
        line = json.dumps(result)
        print(line)
        if args.json:
            with open(args.json, "w") as fh:
                fh.write(line + "\n")
        return 0 if result["within_target"] else 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
