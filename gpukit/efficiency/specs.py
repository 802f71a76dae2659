"""Which index a benchmark builds: ``exact`` (torch) or a faiss factory string.

An :class:`IndexSpec` names the index and its build-time settings; search
parameters (``nprobe``, ``efSearch``) travel separately because sweeps vary
them on one built index. ``dtype`` is a build setting of the exact index
(fp32, fp16, bf16 storage); faiss indexes read float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch

from gpukit.device import DeviceLike
from gpukit.index import ExactIndex, FaissIndex, IndexUsageError, SearchIndex

EXACT = "exact"
DTYPES = ("fp32", "fp16", "bf16")
#: Search parameters a faiss index may take, by the keyword FaissIndex.search uses.
SEARCH_PARAMETERS = ("nprobe", "efSearch")


@dataclass(frozen=True)
class IndexSpec:
    """An index to build: ``factory`` is ``"exact"`` or a faiss factory string."""

    factory: str = EXACT
    metric: str = "ip"
    dtype: str = "fp32"

    def __post_init__(self) -> None:
        if not self.factory or not self.factory.strip():
            raise IndexUsageError("empty index spec; use 'exact' or a faiss factory string such as 'IVF1024,Flat'")
        if self.dtype not in DTYPES:
            raise IndexUsageError(f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        if not self.is_exact and self.dtype != "fp32":
            raise IndexUsageError(f"dtype {self.dtype} applies to the exact index; faiss index {self.factory!r} reads fp32")

    @property
    def is_exact(self) -> bool:
        return self.factory == EXACT

    @property
    def label(self) -> str:
        """Curve name in sweeps: the factory string, with the exact index's dtype."""
        return self.factory if not self.is_exact else f"exact({self.dtype})"

    def build_empty(self, dim: int, device: DeviceLike) -> SearchIndex:
        """An empty index of this spec on ``device``."""
        if self.is_exact:
            return ExactIndex(dim, metric=self.metric, dtype=self.dtype, device=device)
        return FaissIndex(dim, spec=self.factory, metric=self.metric, device=device)

    def with_dtype(self, dtype: str) -> "IndexSpec":
        return IndexSpec(self.factory, self.metric, dtype)


def check_search_params(spec: IndexSpec, params: Mapping[str, Any] | None) -> dict[str, int]:
    """Drop ``None`` values and refuse parameters the index kind cannot take."""
    out = {name: value for name, value in (params or {}).items() if value is not None}
    for name in out:
        if name not in SEARCH_PARAMETERS:
            raise IndexUsageError(f"unknown search parameter {name!r}; known: {', '.join(SEARCH_PARAMETERS)}")
        if spec.is_exact:
            raise IndexUsageError(f"{name} applies to faiss indexes, not the exact index")
    return out


def compute_dtype(index: SearchIndex) -> torch.dtype:
    """The dtype the search's matmul runs in (for the roofline probe).

    ExactIndex multiplies in its storage dtype on CUDA and upcasts to float32
    on CPU; faiss computes in float32.
    """
    if isinstance(index, ExactIndex) and index.device.type == "cuda":
        return index.dtype
    return torch.float32
