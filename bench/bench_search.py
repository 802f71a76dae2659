"""pytest-benchmark suite: exact search queries/s, gpukit ExactIndex (torch)
vs faiss-cpu ``IndexFlat`` on the same data, on CPU.

    pytest bench/bench_search.py --benchmark-only

Each call searches ``QUERIES`` queries; ``extra_info["queries_per_s"]`` is
``QUERIES / median call time``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpukit.index import ExactIndex

faiss = pytest.importorskip("faiss")

DOCS, DIM, QUERIES, K = 20_000, 128, 256, 10


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((DOCS, DIM)).astype(np.float32)
    queries = rng.standard_normal((QUERIES, DIM)).astype(np.float32)
    return corpus, queries


def record_rate(benchmark) -> None:
    if benchmark.stats is None:  # --benchmark-disable: run once, nothing timed
        return
    benchmark.extra_info["queries_per_s"] = QUERIES / benchmark.stats.stats.median


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_torch_exact_fp32(benchmark, data, metric):
    corpus, queries = data
    index = ExactIndex(DIM, metric=metric, device="cpu")
    index.add(torch.from_numpy(corpus))
    query_tensor = torch.from_numpy(queries)
    benchmark(index.search, query_tensor, K)
    record_rate(benchmark)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_faiss_flat(benchmark, data, metric):
    corpus, queries = data
    index = faiss.IndexFlatIP(DIM) if metric == "ip" else faiss.IndexFlatL2(DIM)
    index.add(corpus)
    benchmark(index.search, queries, K)
    record_rate(benchmark)
