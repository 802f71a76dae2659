"""Saved index files are validated on load, and non-finite vectors never enter an index.

A truncated, corrupt or internally inconsistent file is an IndexFileError
naming the file, never a crash or an index that returns wrong results.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from gpukit.errors import GpukitError, IndexFileError, IndexUsageError
from gpukit.index import ExactIndex, FaissIndex, SearchIndex

faiss = pytest.importorskip("faiss")


def gaussian(rows: int, dim: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32))


def saved(tmp_path: Path, index: SearchIndex, name: str = "index.pt") -> Path:
    path = tmp_path / name
    index.save(path)
    return path


def tampered(tmp_path: Path, path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the saved file whose state dict ``edit`` changed."""
    state = torch.load(path, weights_only=True)
    edit(state)
    out = tmp_path / "tampered.pt"
    torch.save(state, out)
    return out


def exact(metric: str = "ip", dtype: torch.dtype = torch.float32, ids: bool = False) -> ExactIndex:
    index = ExactIndex(16, metric=metric, dtype=dtype, device="cpu")
    index.add(gaussian(30, 16, seed=1), ids=np.arange(30, dtype=np.int64) * 2 if ids else None)
    return index


def assert_file_error(path: Path, loader: Callable[..., SearchIndex] = SearchIndex.load) -> None:
    with pytest.raises(IndexFileError) as info:
        loader(path, device="cpu")
    assert isinstance(info.value, GpukitError) and str(path) in str(info.value)


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.99])
def test_truncated_exact_file_is_an_index_file_error(tmp_path: Path, keep: float) -> None:
    data = saved(tmp_path, exact()).read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: int(len(data) * keep)])
    assert_file_error(cut)


def test_garbage_and_missing_files_are_index_file_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert_file_error(garbage)
    assert_file_error(tmp_path / "missing.pt")
    assert_file_error(tmp_path)  # a directory


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda state: state.__setitem__(key, value)


def _edit_tensor(key: str, fn: Callable[[torch.Tensor], Any]) -> Callable[[dict[str, Any]], None]:
    return lambda state: state.__setitem__(key, fn(state[key]))


EXACT_TAMPERING: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], None]]] = {
    "empty-state": ({}, lambda state: state.clear()),
    "dim-differs-from-vectors": ({}, _set("dim", 8)),
    "dim-not-int": ({}, _set("dim", "16")),
    "vectors-1d": ({}, _edit_tensor("vectors", lambda v: v.flatten())),
    "vectors-not-a-tensor": ({}, _edit_tensor("vectors", lambda v: v.tolist())),
    "vectors-dtype-differs": ({"dtype": torch.float16}, _set("dtype", "bfloat16")),
    "vectors-nan": ({}, _edit_tensor("vectors", lambda v: v.index_fill(0, torch.tensor([3]), float("nan")))),
    "unknown-metric": ({}, _set("metric", "dot")),
    "unknown-dtype": ({}, _set("dtype", "float64")),
    "bad-option": ({}, _set("rescore_factor", 0)),
    "rescore-not-bool": ({}, _set("rescore_fp32", "yes")),
    "ids-too-few": ({"ids": True}, _edit_tensor("external_ids", lambda ids: ids[:-1])),
    "ids-float": ({"ids": True}, _edit_tensor("external_ids", lambda ids: ids.double())),
    "l2-norms-missing": ({"metric": "l2"}, _set("sq_norms", None)),
    "l2-norms-too-few": ({"metric": "l2"}, _edit_tensor("sq_norms", lambda n: n[:-1])),
    "l2-norms-wrong-values": ({"metric": "l2"}, _edit_tensor("sq_norms", lambda n: n * 2)),
    "norms-for-ip-index": ({}, _set("sq_norms", torch.ones(30))),
    "cosine-vectors-not-unit": ({"metric": "cosine"}, _edit_tensor("vectors", lambda v: v * 3)),
}


@pytest.mark.parametrize("case", list(EXACT_TAMPERING))
def test_tampered_exact_state_is_an_index_file_error(tmp_path: Path, case: str) -> None:
    options, edit = EXACT_TAMPERING[case]
    path = saved(tmp_path, exact(**options))
    assert_file_error(tampered(tmp_path, path, edit))
    assert_file_error(tampered(tmp_path, path, edit), ExactIndex.load)


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_untampered_files_still_load_and_search_identically(tmp_path: Path, metric: str, dtype: torch.dtype) -> None:
    index = exact(metric, dtype, ids=True)
    loaded = SearchIndex.load(saved(tmp_path, index), device="cpu")
    queries = gaussian(4, 16, seed=2)
    for before, after in zip(index.search(queries, 5), loaded.search(queries, 5)):
        assert torch.equal(before, after)


def test_empty_exact_index_round_trips(tmp_path: Path) -> None:
    loaded = SearchIndex.load(saved(tmp_path, ExactIndex(4, metric="l2", device="cpu")), device="cpu")
    assert isinstance(loaded, ExactIndex) and loaded.ntotal == 0


@pytest.fixture(scope="module")
def faiss_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("faiss_files")
    corpus = gaussian(600, 8, seed=3)
    out = {}
    for spec in ("IVF8,Flat", "HNSW8"):
        index = FaissIndex(8, spec, metric="l2", device="cpu")
        index.add(corpus, ids=torch.arange(600) + 100)
        out[spec] = saved(root, index, spec.replace(",", "_") + ".pt")
    return out


@pytest.mark.parametrize("spec", ["IVF8,Flat", "HNSW8"])
@pytest.mark.parametrize(
    "edit",
    [
        _edit_tensor("faiss_index", lambda b: b[: len(b) // 2]),
        _edit_tensor("faiss_index", lambda b: b[:-3]),
        _edit_tensor("faiss_index", lambda b: b.float()),
        _set("dim", 16),
        _set("metric", "ip"),
        _edit_tensor("external_ids", lambda ids: ids[:10]),
        _set("spec", 3),
    ],
    ids=["half", "last-bytes", "not-bytes", "dim", "metric", "ids", "spec"],
)
def test_corrupt_or_inconsistent_faiss_state_is_an_index_file_error(
    tmp_path: Path, faiss_files: dict[str, Path], spec: str, edit: Callable[[dict[str, Any]], None]
) -> None:
    assert_file_error(tampered(tmp_path, faiss_files[spec], edit), FaissIndex.load)


@pytest.mark.parametrize("make", [lambda: ExactIndex(4, device="cpu"), lambda: FaissIndex(4, "Flat", device="cpu")])
def test_non_finite_vectors_are_rejected(make: Callable[[], SearchIndex]) -> None:
    index = make()
    corpus = gaussian(6, 4, seed=4)
    for bad in (float("nan"), float("inf")):
        spoiled = corpus.clone()
        spoiled[3, 1] = bad
        with pytest.raises(IndexUsageError, match="row 3"):
            index.add(spoiled)
    assert index.ntotal == 0
    index.add(corpus)
    queries = gaussian(2, 4, seed=5)
    queries[1, 0] = float("-inf")
    with pytest.raises(IndexUsageError, match="row 1"):
        index.search(queries, 2)
