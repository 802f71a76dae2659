"""evaluate_embeddings under torch.distributed (gloo, 2 and 3 CPU processes) equals one process bit for bit."""
from __future__ import annotations

import functools
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from gpukit.datasets import load_scifact
from gpukit.pipelines import evaluate_embeddings

MEASURES = ["nDCG@10", "AP", "R@100", "RR@10", "P@10"]
BUCKETS = 128
N_DOCS = 1500


class HashedCounts:
    """Bag of words hashed (crc32, unsalted) into word counts.

    Integer vectors: every inner product is an exact float32 integer, so the
    comparison tests the dealing, the shard ids and the tie-aware merge, not
    which BLAS kernel a shard's shape selects (a kernel can round a float
    dot product differently). Ties are plentiful, so tie order is tested too.
    """

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), BUCKETS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % BUCKETS] += 1
        return out


@functools.lru_cache(maxsize=1)  # read-only afterwards; parsed once per process
def _collections() -> dict[str, tuple[dict, dict, dict]]:
    """A SciFact subset (judged documents first, then others up to N_DOCS),
    and a tiny one that leaves the third rank without documents or queries."""
    data = load_scifact()
    qrels = data.qrels.to_dict()
    judged = {d for q in data.queries for d in qrels.get(q, {})}
    doc_ids = [d for d in data.corpus if d in judged]
    doc_ids += [d for d in data.corpus if d not in judged][: N_DOCS - len(doc_ids)]
    corpus = {d: data.corpus[d] for d in doc_ids}
    queries = {q: data.queries[q] for q in data.queries if q in qrels}
    tiny_queries = dict(list(queries.items())[:20])
    tiny_docs = {d: corpus[d] for d in list(corpus)[:100]}
    return {
        "scifact": (corpus, queries, qrels),
        "tiny": (tiny_docs, tiny_queries, {q: qrels[q] for q in tiny_queries}),
    }


def _evaluate(name: str, corpus: dict, queries: dict, qrels: dict, cache_dir: str | None = None) -> dict:
    batch = 64 if name == "tiny" else 50
    result = evaluate_embeddings(
        HashedCounts(), corpus, queries, qrels, MEASURES, k=100, batch_size=batch, show_progress=False, device="cpu",
        cache_dir=cache_dir, model_name="hashed-counts", cache_shard_batches=1,
    )
    return {
        "report": result.report.to_dict(per_query=True),
        "run": {q: list(ranked.items()) for q, ranked in result.run.to_dict().items()},  # order matters
        "world": result.world,
        "cached": result.corpus_cached,
    }


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        results = {name: _evaluate(name, *data) for name, data in _collections().items()}
        # The ranks write the cache's shards between them; one process reads them back below.
        results["scifact_cache"] = _evaluate("scifact", *_collections()["scifact"], cache_dir=os.path.join(out_dir, "cache"))
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _run_ranks(world: int, tmp_path: Path) -> list[dict]:
    """Spawn ``world`` gloo processes; each rank's results."""
    mp.spawn(_worker, args=(world, str(tmp_path / "init"), str(tmp_path)), nprocs=world, join=True)
    return [torch.load(tmp_path / f"rank{rank}.pt", weights_only=False) for rank in range(world)]


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_distributed_embedding_evaluation_equals_one_process(tmp_path: Path, world: int):
    ranks = _run_ranks(world, tmp_path)
    for name, data in _collections().items():
        single = _evaluate(name, *data)
        assert single["world"] == 1
        for rank, results in enumerate(ranks):
            got = results[name]
            assert got["world"] == world
            # Exact: the same floats and the same ranked lists, ties included.
            assert got["report"] == single["report"], (name, rank)
            assert got["run"] == single["run"], (name, rank)
    from_cache = _evaluate("scifact", *_collections()["scifact"], cache_dir=str(tmp_path / "cache"))
    assert from_cache["cached"] and not ranks[0]["scifact_cache"]["cached"]
    assert from_cache["report"] == ranks[0]["scifact_cache"]["report"] == ranks[0]["scifact"]["report"]
