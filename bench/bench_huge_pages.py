"""Fresh NumPy arrays with and without NumPy's huge-page advice, each in a new process.

Each process allocates and fills ``--arrays`` arrays of ``--mib`` MiB
(``np.ones``, all kept alive, so every page is fresh) and prints the time of
each fill and the process's AnonHugePages; the two settings alternate,
``--rounds`` times. The huge-page advice is NumPy's default
(``madvise(MADV_HUGEPAGE)`` on arrays of 4 MiB or more); off is what
``gpukit.host_memory.no_huge_page_advice`` sets in ``gpukit eval``.

    python bench/bench_huge_pages.py --rounds 3
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = """
import sys, time
import numpy as np
if sys.argv[1] == "off":
    from gpukit.host_memory import no_huge_page_advice
    no_huge_page_advice()
n, size = int(sys.argv[2]), int(sys.argv[3]) << 20
kept, times = [], []
for _ in range(n):
    t = time.perf_counter()
    kept.append(np.ones(size // 8, dtype=np.int64))
    times.append(time.perf_counter() - t)
huge = next((l.split()[1] for l in open("/proc/self/smaps_rollup") if l.startswith("AnonHugePages")), "?")
print(" ".join(f"{1e3 * x:.1f}" for x in times), "| AnonHugePages", huge, "kB")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--arrays", type=int, default=8)
    ap.add_argument("--mib", type=int, default=32)
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"ms per fresh {args.mib} MiB array ({args.arrays} per process)")
    for _ in range(args.rounds):
        for mode in ("advised", "off"):
            out = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.arrays), str(args.mib)], cwd=repo,
                                 capture_output=True, text=True, check=True).stdout.strip()
            print(f"{mode:>8}: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
