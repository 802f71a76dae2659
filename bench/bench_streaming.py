"""pytest-benchmark: time per ``RetrievalEvaluator.update`` on one dense batch.

    pytest bench/bench_streaming.py --benchmark-only
    GPUKIT_BENCH_QUERIES=1024 GPUKIT_BENCH_CANDIDATES=100000 GPUKIT_BENCH_DEVICE=cpu pytest bench/bench_streaming.py

Defaults: a batch of 1,024 queries x 100,000 candidates (float32 scores,
int8 grades, ~0.02% relevant), on CPU unless GPUKIT_BENCH_DEVICE says
otherwise. ``cutoffs`` measures only need the top 100 (two top-k passes per
row); ``full`` adds AP, whose full ranking needs a stable sort of every row.
"""
from __future__ import annotations

import os

import pytest
import torch

from gpukit.pipelines import RetrievalEvaluator

QUERIES = int(os.environ.get("GPUKIT_BENCH_QUERIES", "1024"))
CANDIDATES = int(os.environ.get("GPUKIT_BENCH_CANDIDATES", "100000"))
DEVICE = os.environ.get("GPUKIT_BENCH_DEVICE", "cpu")
RELEVANT_PER_QUERY = 20

CUTOFF_MEASURES = ["nDCG@10", "R@100", "RR@10", "P@10"]
FULL_MEASURES = CUTOFF_MEASURES + ["AP"]


def make_batch(queries: int, candidates: int, device: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random scores and ``RELEVANT_PER_QUERY`` relevant candidates per query (grades 1-2)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(queries, candidates, generator=g)
    targets = torch.zeros(queries, candidates, dtype=torch.int8)
    columns = torch.randint(0, candidates, (queries, RELEVANT_PER_QUERY), generator=g)
    targets.scatter_(1, columns, torch.randint(1, 3, (queries, RELEVANT_PER_QUERY), generator=g, dtype=torch.int8))
    return scores.to(device), targets.to(device)


@pytest.fixture(scope="module")
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    return make_batch(QUERIES, CANDIDATES, DEVICE)


def _sync() -> None:
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()


def _update(evaluator: RetrievalEvaluator, scores: torch.Tensor, targets: torch.Tensor) -> None:
    evaluator.update(scores, targets)
    _sync()  # include the kernels, not just their launch


@pytest.mark.parametrize("measures", [CUTOFF_MEASURES, FULL_MEASURES], ids=["cutoffs", "full"])
def test_update(benchmark, batch, measures):
    scores, targets = batch
    evaluator = RetrievalEvaluator(measures, device=DEVICE)
    benchmark.extra_info.update(queries=QUERIES, candidates=CANDIDATES, device=DEVICE)
    benchmark.pedantic(_update, args=(evaluator, scores, targets), rounds=3, warmup_rounds=1)
    calls = 1 if benchmark.disabled else 4  # warm-up + 3 rounds, or one plain call under --benchmark-disable
    assert evaluator.compute_report().queries == QUERIES * calls
