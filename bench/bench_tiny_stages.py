"""Where a tiny evaluation's time goes: the CACM fixture, stage by stage, in one process.

Stages timed per round, after ``--warmup`` untimed rounds: ``Qrels.from_trec``,
``Run.from_trec``, ``gpukit.evaluate`` (six measures, trec_eval convention, a
fresh ``Qrels`` each round, so its derived data is built every time, as for
the first run of a process) and, separately, the reader alone
(``text_table.read_table`` of the qrels and the run); with ``--pytrec``,
pytrec_eval's stages too (``parse_qrel``, ``RelevanceEvaluator``,
``parse_run``, ``evaluate``, the means). Prints the median of
``--repeats`` rounds per stage. Runs from any checkout (this file's parent
is put first on the path), so that two checkouts can be compared in one
sitting.

    python bench/bench_tiny_stages.py --repeats 41 [--pytrec]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import gpukit  # noqa: E402
import gpukit.data.text_table as text_table  # noqa: E402
from gpukit.data.qrels import _TREC_QRELS_COLUMNS, Qrels  # noqa: E402
from gpukit.data.run import _TREC_RUN_COLUMNS, Run  # noqa: E402
from gpukit.measures import parse_measures  # noqa: E402

MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]
QRELS = os.path.join(REPO, "tests/data/cacm/qrels.cacm.txt")
RUN = os.path.join(REPO, "tests/data/cacm/run.cacm-bm25.anserini.txt")


def one_round(measures) -> dict[str, float]:
    t0 = time.perf_counter()
    qrels = Qrels.from_trec(QRELS)
    t1 = time.perf_counter()
    run = Run.from_trec(RUN)
    t2 = time.perf_counter()
    gpukit.evaluate(qrels, run, measures, convention="trec_eval")
    t3 = time.perf_counter()
    text_table.read_table(QRELS, _TREC_QRELS_COLUMNS, "qrels")
    t4 = time.perf_counter()
    text_table.read_table(RUN, _TREC_RUN_COLUMNS, "run", rest_of_line_ignored=True)
    t5 = time.perf_counter()
    return {"Qrels.from_trec": t1 - t0, "Run.from_trec": t2 - t1, "evaluate": t3 - t2, "file -> means": t3 - t0,
            "read_table qrels": t4 - t3, "read_table run": t5 - t4}


def pytrec_round() -> dict[str, float]:
    import pytrec_eval

    names = ("ndcg_cut_10", "P_10", "recall_100", "recip_rank", "map", "Rprec")
    t0 = time.perf_counter()
    with open(QRELS) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    t1 = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recall.100", "recip_rank", "map", "Rprec"})
    t2 = time.perf_counter()
    with open(RUN) as fh:
        run = pytrec_eval.parse_run(fh)
    t3 = time.perf_counter()
    values = evaluator.evaluate(run).values()
    t4 = time.perf_counter()
    [statistics.fmean(v[name] for v in values) for name in names]
    t5 = time.perf_counter()
    return {"pytrec_eval parse_qrel": t1 - t0, "RelevanceEvaluator": t2 - t1, "parse_run": t3 - t2,
            "evaluate (C)": t4 - t3, "means": t5 - t4, "pytrec_eval file -> means": t5 - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pytrec", action="store_true", help="also time pytrec_eval's stages (alternating)")
    args = ap.parse_args()
    measures = parse_measures(MEASURES)

    def both() -> dict[str, float]:
        return {**one_round(measures), **(pytrec_round() if args.pytrec else {})}

    for _ in range(args.warmup):
        both()
    rounds = [both() for _ in range(args.repeats)]
    print(f"gpukit from {gpukit.__file__}")
    for stage in rounds[0]:
        print(f"{stage:<18} {1e3 * statistics.median(r[stage] for r in rounds):8.3f} ms")


if __name__ == "__main__":
    main()
