"""faiss-gpu's selection limit (k and nprobe <= 2048 on GPU indexes), checked on
CPU by driving the "is this a GPU index" decision directly."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpukit.efficiency import IndexSpec, default_grid
from gpukit.efficiency import sweep as sweep_module
from gpukit.errors import GpukitError
from gpukit.index import IndexUsageError
from gpukit.index.faiss_index import GPU_MAX_SELECTION, check_gpu_search_limits

# The limit is faiss's GPU_MAX_SELECTION_K (faiss/gpu/utils/DeviceDefs.cuh).
FAISS_GPU_LIMIT = 2048


def test_limit_is_faiss_gpu_selection_bound():
    assert GPU_MAX_SELECTION == FAISS_GPU_LIMIT


@pytest.mark.parametrize("k, nprobe", [(FAISS_GPU_LIMIT + 1, None), (10, FAISS_GPU_LIMIT + 1), (5000, 5000)])
def test_over_the_limit_on_gpu_is_a_usage_error(k, nprobe):
    with pytest.raises(IndexUsageError, match="2048") as raised:
        check_gpu_search_limits(True, k, nprobe)
    assert isinstance(raised.value, GpukitError)
    check_gpu_search_limits(False, k, nprobe)  # CPU indexes have no such limit


def test_at_the_limit_is_accepted():
    check_gpu_search_limits(True, FAISS_GPU_LIMIT, FAISS_GPU_LIMIT)
    check_gpu_search_limits(True, 1, None)


def test_gpu_clamp_of_sweep_grids():
    cpu_grid = default_grid(IndexSpec("IVF8192,Flat"))
    clamped, notes = sweep_module.clamp_to_gpu_limits(cpu_grid)
    assert clamped == [s for s in cpu_grid if s["nprobe"] <= FAISS_GPU_LIMIT]
    assert len(notes) == 1 and "4096, 8192" in notes[0] and "2048" in notes[0]
    # Values above the limit collapse onto it, once, in grid order.
    clamped, notes = sweep_module.clamp_to_gpu_limits([{"nprobe": 1}, {"nprobe": 3000}, {"nprobe": 5000}])
    assert clamped == [{"nprobe": 1}, {"nprobe": FAISS_GPU_LIMIT}]
    assert "3000, 5000" in notes[0]
    # Nothing to clamp: no note, grid unchanged (efSearch is a CPU-only HNSW parameter here).
    grid = default_grid(IndexSpec("HNSW32"))
    assert sweep_module.clamp_to_gpu_limits(grid) == (grid, [])


def _has_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


faiss_only = pytest.mark.skipif(not _has_faiss(), reason="needs faiss")


def _vectors(rows: int, dim: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32))


@faiss_only
def test_faiss_index_checks_up_front_when_on_gpu(monkeypatch):
    from gpukit.index import FaissIndex

    index = FaissIndex(8, "IVF4,Flat", device="cpu")
    index.add(_vectors(2100, 8, seed=0))
    queries = _vectors(3, 8, seed=1)
    assert index.search(queries, FAISS_GPU_LIMIT + 1)[1].shape == (3, FAISS_GPU_LIMIT + 1)  # CPU: fine
    monkeypatch.setattr(FaissIndex, "on_gpu", property(lambda self: True))
    with pytest.raises(IndexUsageError, match="k = 2049"):
        index.search(queries, FAISS_GPU_LIMIT + 1)
    with pytest.raises(IndexUsageError, match="nprobe = 4096"):
        index.search(queries, 5, nprobe=4096)


@faiss_only
def test_sweep_on_a_gpu_index_clamps_and_checks_k(monkeypatch):
    from gpukit.index import ExactIndex

    corpus, queries = _vectors(400, 8, seed=2), _vectors(20, 8, seed=3)
    exact = ExactIndex(8, device="cpu")
    exact.add(corpus)
    exact_ids = exact.search(queries, 5)[1]
    monkeypatch.setattr(sweep_module, "runs_on_faiss_gpu", lambda spec, device: not spec.is_exact)
    result = sweep_module.run_sweep(
        [IndexSpec("IVF4,Flat")], corpus, queries, exact_ids, 5, torch.device("cpu"),
        grids={"nprobe": [1, 4, 4096]}, repeats=1, warmup=0,
    )
    assert [p.params["nprobe"] for p in result.points] == [1, 4, FAISS_GPU_LIMIT]
    assert len(result.notes) == 1 and "4096" in result.notes[0]
    assert result.to_dict()["notes"] == result.notes
    with pytest.raises(IndexUsageError, match="k = 2049"):
        sweep_module.run_sweep(
            [IndexSpec("IVF4,Flat")], corpus, queries, exact_ids, FAISS_GPU_LIMIT + 1, torch.device("cpu"),
            repeats=1, warmup=0,
        )
