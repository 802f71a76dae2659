"""FaissIndex: Flat agrees with ExactIndex, IVF/HNSW recall on clustered data,
search parameters, device rules and persistence."""
from __future__ import annotations

import numpy as np
import pytest
import torch

faiss = pytest.importorskip("faiss")

from gpukit.errors import DeviceError  # noqa: E402
from gpukit.index import (  # noqa: E402
    ExactIndex,
    FaissIndex,
    IndexUsageError,
    SearchIndex,
    faiss_has_gpu,
    recall_at_k,
)
from gpukit.index import faiss_index as faiss_module  # noqa: E402


def gaussian(rows: int, dim: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32))


def gaussian_blobs(rows: int, dim: int, centers: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Corpus and queries drawn around the same random centres (clustered data,
    the setting IVF partitioning is designed for)."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((centers, dim))

    def draw(count: int) -> torch.Tensor:
        points = means[rng.integers(0, centers, count)] + rng.standard_normal((count, dim))
        return torch.from_numpy(points.astype(np.float32))

    return draw(rows), draw(200)


def exact_search(corpus: torch.Tensor, queries: torch.Tensor, metric: str, k: int, device: str = "cpu"):
    index = ExactIndex(corpus.shape[1], metric=metric, device=device)
    index.add(corpus.to(device))
    return index.search(queries.to(device), k)


@pytest.fixture(scope="module", autouse=True)
def single_faiss_thread():
    """One OpenMP thread: on small shared CI machines faiss's thread barriers
    spin against torch and other processes and make training 10-30x slower."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(previous)


@pytest.fixture(scope="module")
def blobs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    corpus, queries = gaussian_blobs(8000, 32, centers=40, seed=0)
    _, exact_idx = exact_search(corpus, queries, "l2", 10)
    return corpus, queries, exact_idx


@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
def test_flat_equals_exact_index(metric):
    corpus, queries, k = gaussian(900, 40, seed=1), gaussian(50, 40, seed=2), 15
    index = FaissIndex(40, "Flat", metric=metric, device="cpu")
    index.add(corpus)
    scores, idx = index.search(queries, k)
    exact_scores, exact_idx = exact_search(corpus, queries, metric, k)
    assert idx.dtype == torch.int64 and scores.dtype == torch.float32
    assert torch.equal(idx, exact_idx)
    torch.testing.assert_close(scores, exact_scores, rtol=1e-5, atol=1e-5 * exact_scores.abs().max().item())


def test_ivf_recall_is_high_and_does_not_drop_with_nprobe(blobs):
    corpus, queries, exact_idx = blobs
    index = FaissIndex(32, "IVF64,Flat", metric="l2", device="cpu")
    index.add(corpus)  # trains on the added vectors
    assert index.is_trained and index.ntotal == corpus.shape[0]
    nprobes = (1, 2, 4, 8, 16, 64)
    recalls = [recall_at_k(index.search(queries, 10, nprobe=n)[1], exact_idx, 10) for n in nprobes]
    assert all(later >= earlier for earlier, later in zip(recalls, recalls[1:])), recalls
    assert recalls[4] >= 0.9  # nprobe = 16 of 64 lists
    assert recalls[-1] >= 0.99  # every list visited: exhaustive up to float rounding


def test_hnsw_recall_is_high_with_generous_ef_search(blobs):
    corpus, queries, exact_idx = blobs
    index = FaissIndex(32, "HNSW32", metric="l2", device="cpu")
    index.add(corpus)
    low = recall_at_k(index.search(queries, 10, efSearch=16)[1], exact_idx, 10)
    high = recall_at_k(index.search(queries, 10, efSearch=128)[1], exact_idx, 10)
    assert high >= 0.9 and high >= low


def test_ivf_pq_trains_and_returns_ranked_results(blobs):
    corpus, queries, exact_idx = blobs
    # x4: 16-centroid codebooks; np: no polysemous training (slow, unneeded here).
    index = FaissIndex(32, "IVF16,PQ8x4np", metric="l2", device="cpu")
    index.train(corpus[:2000])
    index.add(corpus)
    scores, idx = index.search(queries, 10, nprobe=16)
    assert idx.shape == (queries.shape[0], 10) and bool(((idx >= 0) & (idx < corpus.shape[0])).all())
    assert bool((scores[:, 1:] <= scores[:, :-1]).all())
    # Product quantisation is lossy, but far better than chance (10 / 8000).
    assert recall_at_k(idx, exact_idx, 10) >= 0.1


def test_search_parameters_apply_to_one_call_only(blobs):
    corpus, queries, _ = blobs
    index = FaissIndex(32, "IVF64,Flat", metric="l2", device="cpu")
    index.add(corpus)
    default_idx = index.search(queries, 10)[1]
    index.search(queries, 10, nprobe=64)
    assert torch.equal(index.search(queries, 10)[1], default_idx)
    with pytest.raises(IndexUsageError, match="efSearch"):
        index.search(queries, 10, efSearch=32)
    with pytest.raises(IndexUsageError, match="nprobe"):
        index.search(queries, 10, nprobe=0)
    flat = FaissIndex(32, "Flat", device="cpu")
    flat.add(corpus[:100])
    with pytest.raises(IndexUsageError, match="nprobe"):
        flat.search(queries, 10, nprobe=4)


def test_bad_spec_training_and_k_are_clean_errors():
    with pytest.raises(IndexUsageError, match="spec"):
        FaissIndex(8, "NotAnIndex", device="cpu")
    too_few = FaissIndex(8, "IVF64,Flat", device="cpu")
    with pytest.raises(IndexUsageError, match="train"):
        too_few.add(gaussian(10, 8, seed=3))
    flat = FaissIndex(8, "Flat", device="cpu")
    flat.add(gaussian(5, 8, seed=4))
    with pytest.raises(IndexUsageError, match="k must be"):
        flat.search(gaussian(1, 8, seed=5), 6)


def test_device_rules():
    index = FaissIndex(8, "Flat", device="cpu")
    index.add(gaussian(20, 8, seed=6))
    with pytest.raises(DeviceError, match=r"\.to\(index\.device\)"):
        index.search(torch.empty(2, 8, device="meta"), 3)
    numpy_scores, numpy_idx = index.search(gaussian(3, 8, seed=7).numpy(), 3)
    assert numpy_idx.device.type == "cpu" and numpy_scores.device.type == "cpu"


def test_cuda_without_faiss_gpu_support_is_a_device_error(monkeypatch):
    if faiss_has_gpu():
        pytest.skip("this faiss build has GPU support")
    # Pretend torch sees a GPU so the faiss capability check is what fails.
    monkeypatch.setattr(faiss_module, "resolve_device", lambda device, like=None: torch.device("cuda", 0))
    with pytest.raises(DeviceError, match="faiss"):
        FaissIndex(8, "Flat", device="cuda")


def test_external_ids_and_save_load_round_trip(tmp_path, blobs):
    corpus, queries, _ = blobs
    external = torch.arange(corpus.shape[0], dtype=torch.int64) * 10 + 7
    index = FaissIndex(32, "IVF32,Flat", metric="ip", device="cpu")
    index.add(corpus, ids=external)
    scores, ids = index.search(queries, 10, nprobe=4)
    path = tmp_path / "ivf.pt"
    index.save(path)
    for loaded in (FaissIndex.load(path), SearchIndex.load(path, device="cpu")):
        assert isinstance(loaded, FaissIndex) and loaded.spec == "IVF32,Flat"
        loaded_scores, loaded_ids = loaded.search(queries, 10, nprobe=4)
        assert torch.equal(loaded_ids, ids) and torch.equal(loaded_scores, scores)
    assert bool(((ids - 7) % 10 == 0).all())
    with pytest.raises(IndexUsageError, match="FaissIndex"):
        ExactIndex.load(path)


def test_memory_bytes_covers_stored_vectors():
    index = FaissIndex(16, "Flat", device="cpu")
    index.add(gaussian(300, 16, seed=8))
    assert index.memory_bytes() >= 300 * 16 * 4


@pytest.mark.cuda
@pytest.mark.skipif(not (torch.cuda.is_available() and faiss_has_gpu()), reason="needs CUDA and faiss-gpu")
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_gpu_flat_equals_exact_index(metric):
    corpus, queries, k = gaussian(900, 40, seed=9), gaussian(50, 40, seed=10), 15
    index = FaissIndex(40, "Flat", metric=metric, device="cuda")
    index.add(corpus.cuda())
    scores, idx = index.search(queries.cuda(), k)
    exact_scores, exact_idx = exact_search(corpus, queries, metric, k, device="cuda")
    assert idx.device == exact_idx.device
    assert recall_at_k(idx, exact_idx, k) >= 0.99
    torch.testing.assert_close(scores, exact_scores, rtol=1e-4, atol=1e-4 * exact_scores.abs().max().item())
