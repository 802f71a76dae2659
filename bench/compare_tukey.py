"""All-pairs comparison: gpukit.stats.tukey.tukey_hsd against statsmodels' pairwise_tukeyhsd.

Seeded per-query scores of ``--systems`` systems on ``--queries`` queries
(values in [0, 1], system means a little apart, so that some pairs differ
and some do not). Each library gets the same (k, Q) matrix (statsmodels as
its ``endog``/``groups`` long form, built beforehand, not timed); the two
alternate over ``--repeats`` rounds (paired), medians and the median of the
paired ratios are printed. Every round's p-values, mean differences and
confidence bounds are compared (p to 1e-6, the rest to 1e-9; exit 1
otherwise).

    python bench/compare_tukey.py [--systems 20 --queries 1000 --repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's gpukit

from gpukit.stats.tukey import tukey_hsd  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", type=int, default=20)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    from statsmodels.stats.multicomp import pairwise_tukeyhsd  # the anchor: an optional bench dependency

    rng = np.random.default_rng(0)
    k, q = args.systems, args.queries
    values = np.clip(rng.normal(0.4, 0.25, (k, q)) + np.linspace(0, 0.1, k)[:, None], 0.0, 1.0)
    endog = values.reshape(-1)
    groups = np.repeat(np.array([f"sys{i:03d}" for i in range(k)]), q)  # sorted names: statsmodels' group order is row order

    g_times, s_times, ratios = [], [], []
    failed = False
    for _ in range(args.repeats):
        t = time.perf_counter()
        ours = tukey_hsd(values)
        g_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs = pairwise_tukeyhsd(endog, groups)
        s_times.append(time.perf_counter() - t)
        ratios.append(s_times[-1] / g_times[-1])
        low, high = theirs.confint[:, 0], theirs.confint[:, 1]
        close = (np.allclose(ours.p_value.numpy(), theirs.pvalues, rtol=0, atol=1e-6)
                 and np.allclose(ours.mean_difference.numpy(), theirs.meandiffs, rtol=0, atol=1e-9)
                 and np.allclose(ours.ci_low.numpy(), low, rtol=0, atol=1e-9)
                 and np.allclose(ours.ci_high.numpy(), high, rtol=0, atol=1e-9))
        if not close:
            print("gpukit and statsmodels differ", file=sys.stderr)
            failed = True
    pairs = k * (k - 1) // 2
    print(f"{k} systems x {q} queries ({pairs} pairs); {args.repeats} paired rounds; load average {os.getloadavg()[0]:.2f}")
    print(f"gpukit {statistics.median(g_times):.4f} s   statsmodels {statistics.median(s_times):.4f} s   "
          f"statsmodels / gpukit {statistics.median(ratios):.1f}   rejected pairs {int(ours.reject.sum())} of {pairs}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
