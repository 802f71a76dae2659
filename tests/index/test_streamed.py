"""HostStreamedIndex: exact results from a memory-mapped host file, within a stated device budget."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from copy_schedule import RecordingCopies, replay

from gpukit.datasets import document_text, load_scifact
from gpukit.errors import IndexFileError, IndexUsageError
from gpukit.index import ExactIndex
from gpukit.index import streamed as streamed_module
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


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_random_vectors_equal_exact_index_with_the_same_blocks(tmp_path: Path, dtype: str, metric: str, overlap: bool):
    g = torch.Generator().manual_seed(9)
    corpus, queries = torch.randn(900, 16, generator=g), torch.randn(40, 16, generator=g)
    write_vectors(tmp_path / "c.npy", corpus, dtype, metric=metric)
    streamed = HostStreamedIndex(tmp_path / "c.npy", metric=metric, dtype=dtype, device="cpu", max_memory=SMALL, overlap=overlap)
    scores, positions = streamed.search(queries, 10)
    plan = streamed.last_plan
    exact = ExactIndex(16, metric=metric, dtype=dtype, device="cpu", chunk_size=plan.corpus_chunk, query_batch_size=plan.query_batch)
    exact.add(corpus)
    ref_scores, ref_positions = exact.search(queries, 10)
    assert plan.corpus_chunk < 900 and streamed.last_overlap is overlap
    assert torch.equal(positions, ref_positions) and torch.equal(scores, ref_scores)


@pytest.mark.parametrize("overlap", [False, True])
def test_scifact_vectors_match_brute_force_within_the_budget(tmp_path: Path, overlap: bool):
    data = load_scifact()
    docs = [document_text(d) for d in list(data.corpus.values())[:2000]]
    encoder = HashingEncoder(64)
    corpus, queries = encoder(docs), encoder(list(data.queries.values())[:100])
    write_vectors(tmp_path / "scifact.npy", torch.from_numpy(corpus), "fp16")  # word counts: exact in fp16
    index = HostStreamedIndex(tmp_path / "scifact.npy", dtype="fp16", device="cpu", max_memory=BUDGET, overlap=overlap)
    scores, positions = index.search(queries, 10)
    assert index.last_overlap is overlap
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


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_device_bytes_is_the_documented_sum(tmp_path: Path, metric: str):
    """rows x d x (2 + 4 [+ 4 for l2]) + B x chunk x 9 + Q x d x 8 + Q x k x 36 (float32 + int64, three lists)."""
    write_vectors(tmp_path / "c.npy", torch.ones(500, 8), "fp16")
    index = HostStreamedIndex(tmp_path / "c.npy", metric=metric, dtype="fp16", device="cpu", chunk_size=100, query_batch_size=7)
    index.search(torch.ones(30, 8), 5)
    row = 8 * (2 + 4 + (4 if metric == "l2" else 0))
    assert index.device_bytes(30, 5) == 100 * row + 7 * 100 * 9 + 30 * 8 * 8 + 30 * 5 * 36


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_prefetched_blocks_give_the_synchronous_result_bit_for_bit(tmp_path: Path, monkeypatch, dtype: str, metric: str):
    """The prefetcher (here with a backend that copies for real and records
    its schedule) changes no number; its device buffers are within the
    accounted share of the budget."""
    g = torch.Generator().manual_seed(13)
    corpus, queries = torch.randn(1000, 24, generator=g), torch.randn(37, 24, generator=g)
    write_vectors(tmp_path / "c.npy", corpus, dtype, metric=metric)
    options = dict(metric=metric, dtype=dtype, device="cpu", chunk_size=96, query_batch_size=16)
    want = HostStreamedIndex(tmp_path / "c.npy", overlap=False, **options).search(queries, 12)
    copies = RecordingCopies()
    monkeypatch.setattr(streamed_module, "copy_backend", lambda device: copies)
    index = HostStreamedIndex(tmp_path / "c.npy", overlap=True, **options)
    got = index.search(queries, 12)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    replay(copies.log)
    assert copies.count("staging") == copies.count("device") == 2 and copies.count("copy") == 11  # ceil(1000 / 96)
    assert copies.count("host_wait") == 9 and copies.count("synchronize") == 0
    storage = torch.finfo(index.dtype).bits // 8
    two_blocks = 2 * 96 * 24 * storage
    assert index.device_bytes(37, 12) - index.device_bytes(37, 12, overlapped=False) == two_blocks // 2
    assert index.device_bytes(37, 12) >= two_blocks + 16 * 96 * 9 + 37 * 12 * 36


def test_a_budget_for_one_block_copies_synchronously_or_is_refused(tmp_path: Path, monkeypatch):
    """Explicit blocks that fit the budget once but not twice: ``"auto"`` copies
    synchronously (and says so), ``overlap=True`` refuses; automatic sizes fit two."""
    write_vectors(tmp_path / "c.npy", torch.randn(400, 32, generator=torch.Generator().manual_seed(3)), "fp16")
    monkeypatch.setattr(HostStreamedIndex, "_auto_overlap", lambda self: True)  # as on CUDA
    queries = torch.randn(10, 32, generator=torch.Generator().manual_seed(4))
    one = 100 * 32 * (2 + 4) + 10 * 100 * 9 + 10 * 32 * 8 + 10 * 5 * 36  # 100-row blocks, copied one at a time
    budget = one + 100 * 32 * 2 - 1  # one byte short of the second block
    options = dict(dtype="fp16", device="cpu", max_memory=budget, chunk_size=100, query_batch_size=10)
    auto = HostStreamedIndex(tmp_path / "c.npy", **options)
    scores, positions = auto.search(queries, 5)
    assert auto.last_overlap is False and auto.device_bytes(10, 5) == one
    with pytest.raises(IndexUsageError, match="two in-flight blocks"):
        HostStreamedIndex(tmp_path / "c.npy", overlap=True, **options).search(queries, 5)
    roomy = HostStreamedIndex(tmp_path / "c.npy", **{**options, "max_memory": budget + 1})
    assert torch.equal(roomy.search(queries, 5)[1], positions) and roomy.last_overlap is True
    sized = HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cpu", max_memory=budget)
    sized.search(queries, 5)
    assert sized.last_overlap is True and sized.device_bytes(10, 5) <= budget
    with pytest.raises(IndexUsageError, match="overlap"):
        HostStreamedIndex(tmp_path / "c.npy", dtype="fp16", device="cpu", overlap="yes")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_overlapped_copies_on_cuda_equal_synchronous_ones_and_exact_index(tmp_path: Path, metric: str):
    corpus = torch.randn(100_000, 64, generator=torch.Generator().manual_seed(7))
    write_vectors(tmp_path / "c.npy", corpus, "bf16")
    queries = torch.randn(128, 64, device="cuda")
    options = dict(metric=metric, dtype="bf16", device="cuda", chunk_size=7_000, query_batch_size=128)
    results = {}
    for overlap in (True, False):
        index = HostStreamedIndex(tmp_path / "c.npy", overlap=overlap, **options)
        results[overlap] = index.search(queries, 10)
        assert index.last_overlap is overlap
    exact = ExactIndex(64, metric=metric, dtype="bf16", device="cuda", chunk_size=7_000, query_batch_size=128)
    exact.add(corpus.cuda())
    want = exact.search(queries, 10)
    for got in results.values():
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
