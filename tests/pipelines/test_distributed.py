"""Multi-process (gloo, CPU) evaluation and sharded search equal the single-process results exactly."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from gpukit.index import ExactIndex
from gpukit.pipelines import RetrievalEvaluator, sharded_search

MEASURES = ["nDCG@10", "R@20", "RR@10", "AP", "P@5", "Rprec", "nDCG", "Bpref", "NumRelRet"]
N_BATCHES, BATCH, CANDIDATES = 7, 9, 50
CORPUS, DIM, QUERIES, K = 97, 6, 11, 10


def _batch(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + i)
    # Non-dyadic scores and ties (rounded to 2 decimals), sparse graded relevance.
    scores = (torch.rand(BATCH, CANDIDATES, generator=g, dtype=torch.float64) * 10).round(decimals=1)
    grades = torch.randint(1, 4, (BATCH, CANDIDATES), generator=g) * (torch.rand(BATCH, CANDIDATES, generator=g) < 0.1)
    return scores, grades


def _vectors() -> tuple[torch.Tensor, torch.Tensor]:
    # Small integers: every dot product is exact in float32, and many are tied.
    g = torch.Generator().manual_seed(7)
    corpus = torch.randint(-2, 3, (CORPUS, DIM), generator=g).to(torch.float32)
    queries = torch.randint(-2, 3, (QUERIES, DIM), generator=g).to(torch.float32)
    return corpus, queries


def _shard_bounds(world: int) -> list[int]:
    # Deliberately uneven shards, one smaller than K.
    cuts = [0, 4] + [4 + (CORPUS - 4) * (r + 1) // (world - 1) for r in range(world - 1)]
    return cuts[: world + 1] if world > 1 else [0, CORPUS]


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        # Round-robin, as a DistributedSampler deals. With 3 processes the last
        # rank gets no batch at all: its lazily allocated (device=None) state
        # must still join the reduction.
        dealers = world - 1 if world == 3 else world
        evaluator = RetrievalEvaluator(MEASURES)
        for i in range(rank, N_BATCHES, dealers) if rank < dealers else ():
            evaluator.update(*_batch(i))
        report = evaluator.compute_report()
        local = evaluator.compute_report(sync=False)
        corpus, queries = _vectors()
        bounds = _shard_bounds(world)
        shard = ExactIndex(DIM, metric="ip", device="cpu")
        shard.add(corpus[bounds[rank] : bounds[rank + 1]])
        scores, positions = sharded_search(shard, queries, K)
        torch.save(
            {"report": report.to_dict(), "local_queries": local.queries, "scores": scores, "positions": positions},
            os.path.join(out_dir, f"rank{rank}.pt"),
        )
    finally:
        dist.destroy_process_group()


def _single_process() -> dict:
    evaluator = RetrievalEvaluator(MEASURES, device="cpu")
    for i in range(N_BATCHES):
        evaluator.update(*_batch(i))
    return evaluator.compute_report().to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_multi_process_equals_single_process_exactly(tmp_path: Path, world: int):
    out = tmp_path / "out"
    out.mkdir()
    mp.spawn(_worker, args=(world, str(tmp_path / "init"), str(out)), nprocs=world, join=True)
    results = [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(world)]
    expected = _single_process()
    corpus, queries = _vectors()
    full = ExactIndex(DIM, metric="ip", device="cpu")
    full.add(corpus)
    ref_scores, ref_positions = full.search(queries, K)
    for r, got in enumerate(results):
        report = got["report"]
        assert all("every process" in m["conventions"]["topics"] for m in report["measures"].values())  # synced
        assert report["topics"] == N_BATCHES * BATCH
        # Exact: the same floats, not approximately equal ones.
        numbers = lambda d: {m: {k: v for k, v in e.items() if k != "conventions"} for m, e in d["measures"].items()}  # noqa: E731
        assert numbers(report) == numbers(expected), f"rank {r}"
        assert torch.equal(got["scores"], ref_scores), f"rank {r}"
        assert torch.equal(got["positions"], ref_positions), f"rank {r}"
    assert sum(g["local_queries"] for g in results) == N_BATCHES * BATCH


def test_sharded_search_without_process_group_is_plain_search():
    corpus, queries = _vectors()
    index = ExactIndex(DIM, metric="ip", device="cpu")
    index.add(corpus)
    scores, positions = sharded_search(index, queries, K)
    ref_scores, ref_positions = index.search(queries, K)
    assert torch.equal(scores, ref_scores) and torch.equal(positions, ref_positions)
