"""How many torch ops an evaluation dispatches (each one a kernel launch on CUDA).

Counts, with a ``TorchDispatchMode`` that sees every aten op, for the six
measures of issue 16 (nDCG@10, P@10, R@100, RR@10, AP, Rprec):

* ``gpukit.evaluate`` of the CACM fixture on the CPU (trec_eval convention,
  a fresh ``Qrels``, as the first run of a process);
* the kernels alone (``compute_measures``) and the kernels plus the report
  (``report_of``) on the ``meta`` device at Q = 10,000, K = 1,000: the
  non-CPU branch of every kernel, the one CUDA runs;
* ``RetrievalEvaluator.update`` on the ``meta`` device, 1,024 x 100,000
  candidates (nDCG@10, P@10, R@100, RR@10, AP, nDCG), after its first call.

Counts are exact and machine-independent. The counter is the op-budget
tests' (tests/op_budget.py). Runs from any checkout (this file's parent
and its tests/ are put first on the path), so that two checkouts can be
compared.

    python bench/count_ops.py
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "tests")]  # this checkout's gpukit, and its op counter

import torch  # noqa: E402
from op_budget import DeviceOpCounter, meta_ranking  # noqa: E402

import gpukit  # noqa: E402
from gpukit.conventions import get_convention  # noqa: E402
from gpukit.judgments.qrels import Qrels  # noqa: E402
from gpukit.data.run import Run  # noqa: E402
from gpukit.evaluation import compute_measures, report_of  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402

SIX = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
QRELS = os.path.join(REPO, "tests/data/cacm/qrels.cacm.txt")
RUN = os.path.join(REPO, "tests/data/cacm/run.cacm-bm25.anserini.txt")


def count(fn) -> DeviceOpCounter:
    # A host read of a meta tensor (a report's one transfer) is answered with zeros.
    with DeviceOpCounter(answer_syncs=True) as counter:
        fn()
    return counter


def main() -> None:
    measures = parse_measures(SIX)
    gpukit.evaluate(Qrels.from_trec(QRELS), Run.from_trec(RUN), measures, convention="trec_eval")  # warm-up
    qrels, run = Qrels.from_trec(QRELS), Run.from_trec(RUN)
    rows = [("gpukit.evaluate, CACM, CPU", count(lambda: gpukit.evaluate(qrels, run, measures, convention="trec_eval")))]
    ranking = meta_ranking(10_000, 1000, 300)
    compute_measures(ranking, measures)  # the first call per device copies the discount table there
    rows.append(("compute_measures, meta, 10k x 1000", count(lambda: compute_measures(ranking, measures))))
    conv = get_convention("trec_eval")
    meta = torch.device("meta")
    rows.append(("report_of (trec_eval), meta, 10k x 1000", count(lambda: report_of(
        ranking, measures, conv, "run", meta, max_depth=None, score_dtype=torch.float64))))
    evaluator = gpukit.RetrievalEvaluator(["nDCG@10", "P@10", "R@100", "RR@10", "AP", "nDCG"], device="meta")
    scores = torch.empty((1024, 100_000), device=meta)
    targets = torch.empty((1024, 100_000), dtype=torch.int64, device=meta)
    evaluator.update(scores, targets)  # builds the per-device discount table
    rows.append(("RetrievalEvaluator.update, meta, 1024 x 100k", count(lambda: evaluator.update(scores, targets))))
    print(f"gpukit from {gpukit.__file__}")
    for name, counter in rows:
        common = ", ".join(f"{op.replace('aten.', '')} {n}" for op, n in counter.ops.most_common(4))
        print(f"{name:<46} {counter.total:5d} ops  ({common}, ...)")


if __name__ == "__main__":
    main()
