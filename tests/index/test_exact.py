"""ExactIndex against a float64 NumPy brute force, chunking invariance, ties,
device rules, ids and persistence."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.errors import DeviceError
from gpukit.index import ExactIndex, IndexUsageError, SearchIndex
from gpukit.index import exact as exact_module
from gpukit.index.base import as_device_tensor
from gpukit.index.topk import merge_topk, sort_by_score_then_index

CUDA = pytest.param(
    "cuda",
    marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")],
)
DEVICES = ["cpu", CUDA]
METRICS = ["ip", "cosine", "l2"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Relative score tolerance against a float64 reference computed from the
# same (dtype-rounded) inputs: fp32 accumulation everywhere, plus output
# rounding to the storage dtype for CUDA half-precision matmuls.
SCORE_RTOL = {
    ("cpu", torch.float32): 1e-5,
    ("cpu", torch.float16): 1e-5,
    ("cpu", torch.bfloat16): 1e-5,
    ("cuda", torch.float32): 1e-5,  # TF32 is off by default for matmul
    ("cuda", torch.float16): 2e-3,
    ("cuda", torch.bfloat16): 1.6e-2,
}


def score_matrix(corpus: np.ndarray, queries: np.ndarray, metric: str) -> np.ndarray:
    """float64 ``(Q, N)`` scores, larger is better (L2: negative squared distance)."""
    corpus = corpus.astype(np.float64)
    queries = queries.astype(np.float64)
    if metric == "cosine":
        corpus = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    if metric == "l2":
        return -((queries[:, None, :] - corpus[None, :, :]) ** 2).sum(axis=2)
    return queries @ corpus.T


def brute_force(corpus: np.ndarray, queries: np.ndarray, metric: str, k: int):
    """float64 reference top-k ordered by (score desc, index asc)."""
    scores = score_matrix(corpus, queries, metric)
    # A stable sort of -score keeps ascending index order among equal scores.
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


def rounded(array: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """``array`` as stored in ``dtype``, back in float64."""
    return torch.from_numpy(array).to(dtype).double().numpy()


def gaussian(rows: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)


def small_integers(rows: int, dim: int, seed: int) -> np.ndarray:
    """Entries in {-1, 0, 1}: dot products are exact in every dtype, so many
    scores tie exactly and tie order is fully determined."""
    return np.random.default_rng(seed).integers(-1, 2, size=(rows, dim)).astype(np.float32)


def build(corpus: np.ndarray, device: str = "cpu", **options) -> ExactIndex:
    index = ExactIndex(corpus.shape[1], device=device, **options)
    index.add(torch.from_numpy(corpus).to(device))
    return index


def search_np(index: ExactIndex, queries: np.ndarray, k: int, **options) -> tuple[np.ndarray, np.ndarray]:
    scores, indices = index.search(torch.from_numpy(queries).to(index.device), k, **options)
    return scores.cpu().double().numpy(), indices.cpu().numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", METRICS)
def test_matches_float64_brute_force(device, dtype, metric):
    corpus, queries, k = gaussian(700, 48, seed=1), gaussian(40, 48, seed=2), 10
    got_scores, got_idx = search_np(build(corpus, device, metric=metric, dtype=dtype), queries, k)
    # The index scores dtype-rounded vectors (cosine: normalised in fp32, then
    # rounded, not renormalised), so those are the reference's inputs.
    ref_metric = "ip" if metric == "cosine" else metric
    if metric == "cosine":
        corpus = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    ref_corpus, ref_queries = rounded(corpus, dtype), rounded(queries, dtype)
    ref_scores, ref_idx = brute_force(ref_corpus, ref_queries, ref_metric, k)
    rtol = SCORE_RTOL[(device, dtype)]
    if metric == "cosine" and dtype != torch.float32:
        # fp32 normalisation may differ from NumPy's in the last bit, which can
        # flip the storage rounding of an element by one ulp of ``dtype``.
        rtol = max(rtol, torch.finfo(dtype).eps)
    tolerance = rtol * np.abs(ref_scores).max()
    # Every returned doc's reference score is (within tolerance) in the top k
    # and matches the returned score; results are sorted.
    true_scores = np.take_along_axis(score_matrix(ref_corpus, ref_queries, ref_metric), got_idx, axis=1)
    assert np.all(true_scores >= ref_scores[:, -1:] - tolerance)
    np.testing.assert_allclose(got_scores, true_scores, rtol=0, atol=tolerance)
    assert np.all(np.diff(got_scores, axis=1) <= 0)
    if rtol <= 1e-5:
        np.testing.assert_array_equal(np.sort(got_idx, axis=1), np.sort(ref_idx, axis=1))
    # Against the unrounded data the scores stay within the storage rounding:
    # about 2^-8 (bf16) / 2^-11 (fp16) relative per element.
    loose = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    exact_scores, _ = brute_force(gaussian(700, 48, 1), gaussian(40, 48, 2), metric, k)
    np.testing.assert_allclose(got_scores[:, 0], exact_scores[:, 0], atol=loose * np.abs(exact_scores).max())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_rescore_fp32_gives_fp32_scores_of_stored_vectors(device, metric):
    corpus, queries, k = gaussian(600, 64, seed=3), gaussian(30, 64, seed=4), 10
    index = build(corpus, device, metric=metric, dtype=torch.bfloat16, rescore_fp32=True)
    got_scores, got_idx = search_np(index, queries, k)
    # Reference: unrounded fp32 queries against the bf16-stored corpus.
    ref_scores, ref_idx = brute_force(rounded(corpus, torch.bfloat16), queries, metric, k)
    np.testing.assert_array_equal(np.sort(got_idx, axis=1), np.sort(ref_idx, axis=1))
    np.testing.assert_allclose(got_scores, ref_scores, rtol=1e-5, atol=1e-5 * np.abs(ref_scores).max())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_tie_order_is_smaller_index_first(device, metric):
    corpus, queries, k = small_integers(300, 8, seed=5), small_integers(25, 8, seed=6), 40
    # Exact duplicates as well as coincidental equal scores.
    corpus = np.concatenate([corpus, corpus[:50], corpus[10:20]])
    ref_scores, ref_idx = brute_force(corpus, queries, metric, k)
    assert (np.diff(ref_scores, axis=1) == 0).any(), "the data must contain ties"
    for dtype in DTYPES:
        got_scores, got_idx = search_np(build(corpus, device, metric=metric, dtype=dtype), queries, k)
        np.testing.assert_array_equal(got_idx, ref_idx)
        np.testing.assert_array_equal(got_scores, ref_scores)


@pytest.mark.parametrize("metric", METRICS)
def test_results_identical_across_chunk_and_batch_sizes(metric):
    corpus, queries, k = gaussian(400, 24, seed=7), gaussian(17, 24, seed=8), 50
    base_scores, base_idx = search_np(build(corpus, metric=metric), queries, k)
    # 7, 33 and 333 do not divide 400; k = 50 exceeds chunks of 3, 7 and 33.
    plans = [(chunk, None) for chunk in (3, 7, 33, 333, 399, 400, 5000)]
    plans += [(64, 1), (333, 5), (None, 4)]
    for chunk_size, query_batch_size in plans:
        index = build(corpus, metric=metric, chunk_size=chunk_size, query_batch_size=query_batch_size)
        scores, idx = search_np(index, queries, k)
        np.testing.assert_array_equal(idx, base_idx)
        np.testing.assert_allclose(scores, base_scores, rtol=1e-6, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.integers(1, 120),
    chunk_size=st.integers(1, 130),
    query_batch_size=st.integers(1, 12),
    data=st.data(),
)
def test_tied_results_bitwise_identical_for_any_chunking(rows, chunk_size, query_batch_size, data):
    k = data.draw(st.integers(1, rows))
    corpus, queries = small_integers(rows, 6, seed=rows), small_integers(9, 6, seed=rows + 1)
    ref_scores, ref_idx = brute_force(corpus, queries, "ip", k)
    index = build(corpus, chunk_size=chunk_size, query_batch_size=query_batch_size)
    scores, idx = search_np(index, queries, k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(scores, ref_scores)


def test_memory_budget_bounds_every_score_block(monkeypatch):
    corpus, queries, k = gaussian(2000, 16, seed=9), gaussian(64, 16, seed=10), 5
    max_memory = 64 * 1024
    seen_blocks = []
    real_block_topk = exact_module.block_topk

    def recording_block_topk(block, k):
        seen_blocks.append(tuple(block.shape))
        return real_block_topk(block, k)

    monkeypatch.setattr(exact_module, "block_topk", recording_block_topk)
    scores, idx = search_np(build(corpus, max_memory=max_memory), queries, k)
    largest = max(rows * cols for rows, cols in seen_blocks)
    assert largest * exact_module.BYTES_PER_SCORE <= max_memory
    assert largest < queries.shape[0] * corpus.shape[0]
    ref_scores, ref_idx = brute_force(corpus, queries, "ip", k)
    np.testing.assert_array_equal(idx, ref_idx)


def test_sort_by_score_then_index_matches_lexsort():
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 4, size=(20, 15)).astype(np.float32)
    indices = np.stack([rng.permutation(100)[:15] for _ in range(20)])
    got_scores, got_idx = sort_by_score_then_index(torch.from_numpy(scores), torch.from_numpy(indices))
    order = np.stack([np.lexsort((indices[r], -scores[r])) for r in range(20)])
    np.testing.assert_array_equal(got_idx.numpy(), np.take_along_axis(indices, order, axis=1))
    np.testing.assert_array_equal(got_scores.numpy(), np.take_along_axis(scores, order, axis=1))


@pytest.mark.parametrize("offset", [50, 2**31 - 60, 2**40])  # the last: indices too wide for packed keys
def test_merge_topk_matches_lexsort(offset):
    # Both halves of a merge from a plain lexsort; scores with +-0 (equal), +-inf, subnormals and ties.
    rng = np.random.default_rng(offset % 97)
    values = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, 3.0, 1e-40, -1e-40], dtype=np.float32)
    k = 9
    best = values[rng.integers(0, len(values), size=(30, k))]
    best_idx = np.stack([rng.permutation(50)[:k] for _ in range(30)])
    order = np.stack([np.lexsort((best_idx[r], -best[r])) for r in range(30)])  # -(-0.0) == 0.0: one key
    best, best_idx = np.take_along_axis(best, order, 1), np.take_along_axis(best_idx, order, 1)
    new = values[rng.integers(0, len(values), size=(30, k))]
    new_idx = np.stack([rng.permutation(50)[:k] + offset for _ in range(30)])
    got_scores, got_idx = merge_topk(*(torch.from_numpy(a) for a in (best, best_idx, new, new_idx)))
    scores, indices = np.concatenate([best, new], 1), np.concatenate([best_idx, new_idx], 1)
    order = np.stack([np.lexsort((indices[r], -scores[r])) for r in range(30)])[:, :k]
    np.testing.assert_array_equal(got_idx.numpy(), np.take_along_axis(indices, order, axis=1))
    want = np.take_along_axis(scores, order, axis=1)
    np.testing.assert_array_equal(got_scores.numpy(), want)
    np.testing.assert_array_equal(np.signbit(got_scores.numpy()), np.signbit(want))  # the very values, -0.0 kept


def test_k_out_of_range_and_bad_input_are_errors():
    index = ExactIndex(4, device="cpu")
    with pytest.raises(IndexUsageError, match="empty"):
        index.search(torch.zeros(1, 4), 1)
    index.add(torch.randn(5, 4))
    for bad_k in (0, 6, -1):
        with pytest.raises(IndexUsageError, match="k must be"):
            index.search(torch.zeros(1, 4), bad_k)
    with pytest.raises(IndexUsageError, match="shape"):
        index.search(torch.zeros(2, 3), 1)
    with pytest.raises(IndexUsageError, match="floating"):
        index.search(torch.zeros(2, 4, dtype=torch.int64), 1)
    with pytest.raises(IndexUsageError, match="metric"):
        ExactIndex(4, metric="dot", device="cpu")
    with pytest.raises(IndexUsageError, match="dtype"):
        ExactIndex(4, dtype=torch.float64, device="cpu")


def test_device_mismatch_raises_device_error():
    index = build(gaussian(10, 4, seed=12))
    with pytest.raises(DeviceError, match=r"\.to\(index\.device\)"):
        index.search(torch.empty(2, 4, device="meta"), 1)
    with pytest.raises(DeviceError):
        index.add(torch.empty(2, 4, device="meta"))
    with pytest.raises(DeviceError, match="meta"):
        as_device_tensor(torch.empty(1, device="meta"), torch.device("cpu"), "queries")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_host_queries_on_cuda_index_raise_device_error():
    index = build(gaussian(10, 4, seed=13), device="cuda")
    with pytest.raises(DeviceError, match=r"\.to\(index\.device\)"):
        index.search(torch.zeros(1, 4), 1)
    with pytest.raises(DeviceError):
        index.search(np.zeros((1, 4), dtype=np.float32), 1)


def test_numpy_inputs_on_cpu_index_match_tensors():
    corpus, queries = gaussian(50, 8, seed=14), gaussian(6, 8, seed=15)
    from_numpy = ExactIndex(8, device="cpu")
    from_numpy.add(corpus)
    scores, idx = from_numpy.search(queries, 4)
    ref_scores, ref_idx = search_np(build(corpus), queries, 4)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    np.testing.assert_array_equal(scores.double().numpy(), ref_scores)


def test_external_ids_and_incremental_adds():
    corpus, queries, k = gaussian(90, 8, seed=16), gaussian(7, 8, seed=17), 12
    external = np.random.default_rng(18).permutation(10_000)[:90].astype(np.int64)
    index = ExactIndex(8, device="cpu", chunk_size=25)
    for start in range(0, 90, 40):  # several adds of uneven size
        index.add(corpus[start : start + 40], ids=external[start : start + 40])
    scores, ids = search_np(index, queries, k)
    ref_scores, ref_idx = brute_force(corpus, queries, "ip", k)
    np.testing.assert_array_equal(ids, external[ref_idx])
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5)
    with pytest.raises(IndexUsageError, match="ids"):
        index.add(corpus[:2])
    positional = build(corpus[:3])
    with pytest.raises(IndexUsageError, match="ids"):
        positional.add(corpus[:2], ids=[1, 2])


def test_memory_bytes_counts_vectors_norms_and_ids():
    rows, dim = 40, 16
    index = ExactIndex(dim, metric="l2", dtype=torch.bfloat16, device="cpu")
    index.add(gaussian(rows, dim, seed=19), ids=list(range(rows)))
    assert index.memory_bytes() == rows * dim * 2 + rows * 4 + rows * 8


@pytest.mark.parametrize("metric", METRICS)
def test_save_load_round_trip(tmp_path, metric):
    corpus, queries = gaussian(120, 16, seed=20), gaussian(9, 16, seed=21)
    options = {"dtype": torch.bfloat16, "chunk_size": 50, "rescore_fp32": True}
    index = ExactIndex(16, metric=metric, device="cpu", **options)
    index.add(corpus, ids=np.arange(120, dtype=np.int64) * 3 + 1)
    path = tmp_path / "exact.pt"
    index.save(path)
    for loaded in (ExactIndex.load(path), SearchIndex.load(path, device="cpu")):
        assert isinstance(loaded, ExactIndex) and loaded.dtype == torch.bfloat16
        for before, after in zip(index.search(queries, 10), loaded.search(queries, 10)):
            assert torch.equal(before, after)


def test_what_chunking_changes_with_duplicated_vectors():
    """Review: the docstring claimed results independent of the chunking. With
    duplicated fp32 vectors the block shape changes the matmul's rounding, so
    a copy can score a few ulps above its original and outrank it (seen on
    this CPU for chunks of 333 and 7). What holds instead (module docstring):
    the same block sizes give the same result; across chunkings only score
    differences within the float32 rounding of the dot product, and the order
    of documents that close; exact scores give the same result for every
    chunking."""
    base, queries, k = gaussian(500, 64, seed=21), gaussian(50, 64, seed=22), 20
    corpus = np.concatenate([base, base])  # row i and row i + 500 are equal
    want_scores, want_idx = search_np(build(corpus), queries, k)
    for chunk_size in (333, 7, 1000):
        scores, idx = search_np(build(corpus, chunk_size=chunk_size), queries, k)
        again_scores, again_idx = search_np(build(corpus, chunk_size=chunk_size), queries, k)
        np.testing.assert_array_equal(again_idx, idx)
        np.testing.assert_array_equal(again_scores, scores)
        np.testing.assert_array_equal(idx % 500, want_idx % 500)  # the same documents, a copy for its original
        # Each side is within the float32 rounding bound of a 64-term sum, d * 2^-24 * sum |q_i x_i|.
        bound = 2 * 64 * 2.0**-24 * np.take_along_axis(np.abs(queries).astype(np.float64) @ np.abs(corpus).T, idx, 1)
        assert np.all(np.abs(scores - want_scores) <= bound)
        # The tie rule holds for the scores as computed: (score desc, position asc).
        order = np.stack([np.lexsort((idx[r], -scores[r])) for r in range(len(idx))])
        np.testing.assert_array_equal(order, np.broadcast_to(np.arange(k), idx.shape))
    integers = np.concatenate([small_integers(300, 8, seed=23)] * 2)
    int_queries = small_integers(20, 8, seed=24)
    ref_scores, ref_idx = brute_force(integers, int_queries, "ip", 30)
    for chunk_size in (333, 7, 1000):
        scores, idx = search_np(build(integers, chunk_size=chunk_size), int_queries, 30)
        np.testing.assert_array_equal(idx, ref_idx)
        np.testing.assert_array_equal(scores, ref_scores)
