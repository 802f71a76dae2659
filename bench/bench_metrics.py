"""Kernel-only throughput of the metric kernels on a (Q, K) judged ranking.

Run:  python -m pytest bench/bench_metrics.py --benchmark-only
      GPUKIT_BENCH_DEVICE=cuda python -m pytest bench/bench_metrics.py --benchmark-json=out.json

Setup (not timed): Q = 100,000 queries x K = 100 retrieved documents and
15 judgments per query (grades 0-3, ten of them retrieved), formed once into
a ``RankedJudgments`` by ``gpukit.ranking.form_ranking`` from
``Qrels.from_arrays`` and ``Run.from_topk`` (the run is built from tensors,
as a model's top-k would be; ingestion from text is timed in
bench/bench_ingestion.py).

Timed: ``gpukit.evaluation.compute_measures`` for nDCG@10, P@10, R@100,
RR@10, AP and Rprec, one measure per benchmark plus all six together, with
the device synchronised inside the timed call. ``extra_info`` records
queries/s at the median time. Environment: ``GPUKIT_BENCH_DEVICE``
(default cpu), ``GPUKIT_BENCH_QUERIES`` (default 100000).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.device import resolve_device
from gpukit.evaluation import compute_measures
from gpukit.measures import parse_measure, parse_measures
from gpukit.ranking import RankedJudgments, form_ranking

DEVICE = resolve_device(os.environ.get("GPUKIT_BENCH_DEVICE", "cpu"))
QUERIES = int(os.environ.get("GPUKIT_BENCH_QUERIES", "100000"))
DEPTH = 100
VOCABULARY = 500_000
JUDGED_PER_QUERY = 15
MEASURES = ["nDCG@10", "P@10", "R@100", "RR@10", "AP", "Rprec"]


def synthetic_ranking(n_queries: int, depth: int, device: torch.device, seed: int = 0) -> RankedJudgments:
    """A judged (n_queries, depth) ranking on ``device``, built through form_ranking."""
    gen = torch.Generator().manual_seed(seed)
    stride = VOCABULARY // depth
    # Distinct documents per row: one random offset per query, strided columns.
    docs = (torch.arange(depth)[None, :] * stride + torch.randint(0, stride, (n_queries, 1), generator=gen)) % VOCABULARY
    scores = torch.rand(n_queries, depth, generator=gen, dtype=torch.float64)
    query_ids = [f"q{i}" for i in range(n_queries)]
    doc_ids = [f"d{i}" for i in range(VOCABULARY)]
    run = Run.from_topk(scores, docs, query_ids, doc_ids, name="bench").to(device)
    # Judged: ranks 1-5 and 51-55 (retrieved) plus five neighbours never retrieved.
    judged = torch.cat([docs[:, :5], docs[:, 50:55], (docs[:, :5] + 1) % VOCABULARY], dim=1)
    qrels = Qrels.from_arrays(
        np.repeat(np.array(query_ids, dtype=object), JUDGED_PER_QUERY),
        np.array(doc_ids, dtype=object)[judged.reshape(-1).numpy()],
        torch.randint(0, 4, (n_queries * JUDGED_PER_QUERY,), generator=gen).numpy(),
    )
    return form_ranking(qrels, run, complete=True)


def _sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


@pytest.fixture(scope="module")
def ranking() -> RankedJudgments:
    return synthetic_ranking(QUERIES, DEPTH, DEVICE)


def _run(benchmark, ranking: RankedJudgments, measures) -> None:
    def kernels():
        out = compute_measures(ranking, measures)
        _sync()
        return out

    result = benchmark.pedantic(kernels, rounds=5, iterations=1, warmup_rounds=1)
    assert all(values.shape == (ranking.num_topics,) for values, _ in result.values())
    if benchmark.stats is None:  # --benchmark-disable: run once, nothing timed
        return
    median = benchmark.stats.stats.median
    benchmark.extra_info.update(
        device=str(DEVICE), queries=ranking.num_topics, depth=DEPTH,
        queries_per_s=ranking.num_topics / median if median > 0 else None,
    )


@pytest.mark.parametrize("name", MEASURES)
def test_metric_kernel(benchmark, ranking, name):
    _run(benchmark, ranking, [parse_measure(name)])


def test_all_six_together(benchmark, ranking):
    _run(benchmark, ranking, parse_measures(MEASURES))


def main() -> None:
    """Plain timing without pytest-benchmark (for machines that lack it): JSON on stdout."""
    import json
    import time

    ranking = synthetic_ranking(QUERIES, DEPTH, DEVICE)
    results = {}
    for label, measures in [(n, [parse_measure(n)]) for n in MEASURES] + [("all six", parse_measures(MEASURES))]:
        compute_measures(ranking, measures)  # warm-up
        _sync()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            compute_measures(ranking, measures)
            _sync()
            times.append(time.perf_counter() - start)
        median = float(np.median(times))
        results[label] = {"median_s": median, "queries_per_s": ranking.num_topics / median}
    print(json.dumps({"device": str(DEVICE), "queries": ranking.num_topics, "depth": DEPTH, "kernels": results}, indent=2))


if __name__ == "__main__":
    main()
