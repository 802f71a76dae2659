"""HostStreamedIndex: exact results from a memory-mapped host file, within a stated device budget."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gpukit.datasets import document_text, load_scifact
from gpukit.errors import IndexFileError, IndexUsageError
from gpukit.index import ExactIndex
from gpukit.index.streamed import HostStreamedIndex, write_vectors
from gpukit.pipelines.encoders import HashingEncoder

BUDGET = 200_000  # bytes: forces many blocks of SciFact
SMALL = 60_000  # the same for the small tests


def _reference(corpus: np.ndarray, queries: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """NumPy float64 brute force, (score desc, index asc); exact for small-integer vectors."""
    c, q = corpus.astype(np.float64), queries.astype(np.float64)
    scores = -((q[:, None, :] - c[None, :, :]) ** 2).sum(2) if metric == "l2" else q @ c.T
    order = np.lexsort((np.broadcast_to(np.arange(c.shape[0]), scores.shape), -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), order


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_small_integer_vectors_match_an_independent_brute_force(tmp_path: Path, dtype: str, metric: str):
    g = torch.Generator().manual_seed(5)
    corpus = torch.randint(-3, 4, (700, 12), generator=g).float()  # exact in every dtype; many ties
    queries = torch.randint(-3, 4, (33, 12), generator=g).float()
    write_vectors(tmp_path / "c.npy", corpus, dtype)
    index = HostStreamedIndex(tmp_path / "c.npy", metric=metric, dtype=dtype, device="cpu", max_memory=SMALL)
    scores, positions = index.search(queries, 25)
    ref_scores, ref_positions = _reference(corpus.numpy(), queries.numpy(), 25, metric)
    assert index.last_plan.corpus_chunk < 700  # really streamed in blocks
    np.testing.assert_array_equal(positions.numpy(), ref_positions)
    np.testing.assert_array_equal(scores.numpy(), ref_scores.astype(np.float32))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_random_vectors_equal_exact_index_with_the_same_blocks(tmp_path: Path, dtype: str, metric: str):
    g = torch.Generator().manual_seed(9)
    corpus, queries = torch.randn(900, 16, generator=g), torch.randn(40, 16, generator=g)
    write_vectors(tmp_path / "c.npy", corpus, dtype, metric=metric)
    streamed = HostStreamedIndex(tmp_path / "c.npy", metric=metric, dtype=dtype, device="cpu", max_memory=SMALL)
    scores, positions = streamed.search(queries, 10)
    plan = streamed.last_plan
    exact = ExactIndex(16, metric=metric, dtype=dtype, device="cpu", chunk_size=plan.corpus_chunk, query_batch_size=plan.query_batch)
    exact.add(corpus)
    ref_scores, ref_positions = exact.search(queries, 10)
    assert plan.corpus_chunk < 900
    assert torch.equal(positions, ref_positions) and torch.equal(scores, ref_scores)


def test_scifact_vectors_match_brute_force_within_the_budget(tmp_path: Path):
    data = load_scifact()
    docs = [document_text(d) for d in list(data.corpus.values())[:2000]]
    encoder = HashingEncoder(64)
    corpus, queries = encoder(docs), encoder(list(data.queries.values())[:100])
    write_vectors(tmp_path / "scifact.npy", torch.from_numpy(corpus), "fp16")  # word counts: exact in fp16
    index = HostStreamedIndex(tmp_path / "scifact.npy", dtype="fp16", device="cpu", max_memory=BUDGET)
    scores, positions = index.search(queries, 10)
    ref_scores, ref_positions = _reference(corpus, queries, 10, "ip")
    np.testing.assert_array_equal(positions.numpy(), ref_positions)
    np.testing.assert_array_equal(scores.numpy(), ref_scores.astype(np.float32))
    # The planner's accounting: everything one search puts on the device fits the budget.
    assert index.device_bytes(100, 10) <= BUDGET
    assert index.last_plan.corpus_chunk < 2000 and index.memory_bytes() == 0


def test_too_small_a_budget_or_a_wrong_file_is_refused(tmp_path: Path):
    write_vectors(tmp_path / "c.npy", torch.ones(50, 8), "fp16")
    with pytest.raises(IndexUsageError, match="budget"):
        HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cpu", max_memory=1000).search(torch.ones(30, 8), 5)
    with pytest.raises(IndexFileError, match="float32"):
        HostStreamedIndex(tmp_path / "c.npy", dtype="fp32", device="cpu")
    with pytest.raises(IndexUsageError, match="budget"):  # explicit blocks beyond the budget
        HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cpu", max_memory=SMALL, chunk_size=50, query_batch_size=200).search(torch.ones(200, 8), 5)
    with pytest.raises(IndexUsageError, match="write_vectors"):
        HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cpu").add(torch.ones(1, 8))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_measured_device_memory_stays_within_the_budget(tmp_path: Path):
    """The allocator's peak during a search, not only the planner's sum, stays
    within ``max_memory`` (over what was allocated before: the queries)."""
    corpus = torch.randn(200_000, 64, generator=torch.Generator().manual_seed(2))
    write_vectors(tmp_path / "c.npy", corpus, "fp16")
    budget = 8 * 2**20  # 8 MiB for a 24 MiB fp16 corpus: many blocks
    index = HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cuda", max_memory=budget)
    queries = torch.randn(256, 64, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    scores, positions = index.search(queries, 10)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    assert index.last_plan.corpus_chunk < 200_000
    assert peak <= budget, (peak, budget, index.device_bytes(256, 10))
    exact = ExactIndex(64, dtype="fp16", device="cuda", chunk_size=index.last_plan.corpus_chunk, query_batch_size=index.last_plan.query_batch)
    exact.add(corpus)
    ref_scores, ref_positions = exact.search(queries, 10)
    assert torch.equal(positions, ref_positions) and torch.equal(scores, ref_scores)
