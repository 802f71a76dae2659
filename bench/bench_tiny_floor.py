"""How low can a tiny evaluation go in gpukit's design? The CACM fixture, file -> means.

Times, alternating in one process (median of ``--repeats`` rounds after
``--warmup``):

* the two files' text read into columns (``text_table.read_table``: the
  reader every path shares);
* every torch op that ``Qrels.from_trec`` + ``Run.from_trec`` +
  ``gpukit.evaluate`` dispatch (recorded once with a ``TorchDispatchMode``,
  then replayed as bare ``OpOverload`` calls: the dispatcher's cost with no
  Python around it);
* the ranking stage's tables (the (T, K) grades and (T, L) ideal grades the
  kernels read) built from the two files' bytes outside gpukit, unchecked:
  by the fewest NumPy calls found, and by Python per line
  (bench/tiny_tables.py; both are first checked equal to gpukit's);
* gpukit's whole file -> means (six measures, trec_eval convention);
* pytrec_eval's whole file -> means (``parse_qrel``, ``RelevanceEvaluator``,
  ``parse_run``, ``evaluate``, the means), the anchor of issue 16's CACM target.

The first two together are a floor for this design (text reader + torch
kernels); the rest of gpukit's time is Python and NumPy between them. The
tables' builders bound that rest from below: the bytes-to-tables work of
this evaluation, with none of gpukit's checks, no Qrels or Run of their own
and no report, costs at least their time on top of the torch ops.

    python bench/bench_tiny_floor.py --repeats 101
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, HERE]

import pytrec_eval  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import gpukit  # noqa: E402
from gpukit.data import text_table  # noqa: E402
from gpukit.data.qrels import _TREC_QRELS_COLUMNS, Qrels  # noqa: E402
from gpukit.data.run import _TREC_RUN_COLUMNS, Run  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402
from gpukit.ranking import form_ranking  # noqa: E402
from tiny_tables import numpy_tables, python_tables  # noqa: E402

QRELS = os.path.join(REPO, "tests/data/cacm/qrels.cacm.txt")
RUN = os.path.join(REPO, "tests/data/cacm/run.cacm-bm25.anserini.txt")
MEASURES = parse_measures(["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"])
PYTREC = ("ndcg_cut_10", "P_10", "recall_100", "map", "Rprec", "recip_rank")


class _Recorder(TorchDispatchMode):
    """Records each dispatched op with its arguments (and runs it)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def gpukit_means() -> list[float]:
    report = gpukit.evaluate(Qrels.from_trec(QRELS), Run.from_trec(RUN), MEASURES, convention="trec_eval")
    return [report[m].mean for m in MEASURES]


def pytrec_means() -> list[float]:
    with open(QRELS) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map", "Rprec"})
    with open(RUN) as fh:
        run = pytrec_eval.parse_run(fh)
    values = evaluator.evaluate(run).values()
    return [statistics.fmean(v[name] for v in values) for name in PYTREC]


def read_text() -> None:
    text_table.read_table(QRELS, _TREC_QRELS_COLUMNS, "qrels")
    text_table.read_table(RUN, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)


def texts() -> tuple[bytes, bytes]:
    with open(QRELS, "rb") as q, open(RUN, "rb") as r:
        return q.read(), r.read()


def check_tables() -> None:
    """Both builders give gpukit's grade and ideal tables (trec_eval convention), or this stops."""
    ranking = form_ranking(Qrels.from_trec(QRELS), Run.from_trec(RUN), complete=True)
    for build in (numpy_tables, python_tables):
        grades, ideal = build(*texts())
        if not (torch.equal(ranking.grades, torch.from_numpy(grades)) and torch.equal(ranking.ideal, torch.from_numpy(ideal))):
            raise SystemExit(f"{build.__name__} does not give gpukit's tables")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=101)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    with _Recorder() as recorder:
        gpukit_means()
    ops = recorder.ops

    def replay() -> None:
        for func, op_args, op_kwargs in ops:
            func(*op_args, **op_kwargs)

    check_tables()
    stages = {"text read (both files)": read_text, f"torch ops replayed ({len(ops)})": replay,
              "tables by NumPy, unchecked": lambda: numpy_tables(*texts()),
              "tables by Python, unchecked": lambda: python_tables(*texts()),
              "gpukit file -> means": gpukit_means, "pytrec_eval file -> means": pytrec_means}
    times: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(args.warmup + args.repeats):
        for name, fn in stages.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name, values in times.items():
        print(f"{name:<30} {1e3 * statistics.median(values[args.warmup:]):8.3f} ms")


if __name__ == "__main__":
    main()
