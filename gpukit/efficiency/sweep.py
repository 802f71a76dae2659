"""Parameter sweeps: one (recall@k, qps) point per search setting.

Per index spec, the swept parameter is the one that trades quality for
speed at search time:

* IVF indexes (``IVF<nlist>`` in the factory string): ``nprobe``, default
  powers of two from 1 to ``nlist``;
* HNSW indexes: ``efSearch``, default 16, 32, ..., 512;
* the exact index: the storage ``dtype`` (fp32, fp16, bf16), one build each;
* any other faiss index: its single default setting.

On a faiss GPU index, ``nprobe`` values above faiss-gpu's limit
(:data:`~gpukit.index.faiss_index.GPU_MAX_SELECTION` = 2048) are clamped to
it, with a note in :attr:`SweepResult.notes`; a ``k`` above it is refused
before anything is built.

Each point's throughput is measured as on the throughput axis (median of
repeats over the full query set) and its recall against the exact float32
top-k. The Pareto front is then marked over all points (``on_front``) and
within each index (``on_index_front``).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import torch

from gpukit.efficiency.build import build_index
from gpukit.efficiency.pareto import pareto_front
from gpukit.efficiency.specs import IndexSpec
from gpukit.efficiency.throughput import measure_throughput
from gpukit.index import SearchIndex, recall_at_k
from gpukit.index.faiss_index import GPU_MAX_SELECTION, check_gpu_search_limits

DEFAULT_EF_SEARCH = (16, 32, 64, 128, 256, 512)
DEFAULT_DTYPES = ("fp32", "fp16", "bf16")
_NLIST = re.compile(r"IVF(\d+)")


@dataclass
class SweepPoint:
    index: str
    params: dict[str, Any]
    recall: float
    qps: float
    median_seconds: float
    on_front: bool = False
    on_index_front: bool = False


@dataclass
class SweepResult:
    """All points of a sweep, with the front marked."""

    k: int
    metric: str
    device: str
    queries: int
    points: list[SweepPoint] = field(default_factory=list)
    #: What the sweep changed in the requested grids, and why.
    notes: list[str] = field(default_factory=list)

    def mark_fronts(self) -> None:
        coords = [(p.recall, p.qps) for p in self.points]
        on_front = set(pareto_front(coords))
        for i, point in enumerate(self.points):
            point.on_front = i in on_front
        for name in self.index_names():
            members = [i for i, p in enumerate(self.points) if p.index == name]
            local = pareto_front([coords[i] for i in members])
            for j, i in enumerate(members):
                self.points[i].on_index_front = j in local

    def index_names(self) -> list[str]:
        return list(dict.fromkeys(p.index for p in self.points))

    def front(self) -> list[SweepPoint]:
        """The overall front, from the fastest to the most accurate point."""
        coords = [(p.recall, p.qps) for p in self.points]
        return [self.points[i] for i in pareto_front(coords)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "metric": self.metric,
            "device": self.device,
            "queries": self.queries,
            "axes": {"x": f"recall@{self.k} vs exact float32 search", "y": "queries per second (median of repeats)"},
            "dominance": "a dominates b if recall_a >= recall_b and qps_a >= qps_b, one strictly",
            "points": [asdict(p) for p in self.points],
            "front": [asdict(p) for p in self.front()],
            "notes": list(self.notes),
        }

    def save_json(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2)


def default_grid(spec: IndexSpec, grids: Mapping[str, Sequence[Any]] | None = None) -> list[dict[str, Any]]:
    """The settings swept for ``spec``; ``grids`` overrides a parameter's values."""
    grids = grids or {}
    if spec.is_exact:
        return [{"dtype": d} for d in grids.get("dtype", DEFAULT_DTYPES)]
    nlist = _NLIST.search(spec.factory)
    if nlist:
        top = int(nlist.group(1))
        values = grids.get("nprobe") or [2**i for i in range(top.bit_length()) if 2**i <= top]
        return [{"nprobe": int(v)} for v in values]
    if "HNSW" in spec.factory:
        return [{"efSearch": int(v)} for v in grids.get("efSearch", DEFAULT_EF_SEARCH)]
    return [{}]


def runs_on_faiss_gpu(spec: IndexSpec, device: torch.device) -> bool:
    """True when ``spec`` builds a faiss index on the GPU (faiss-gpu's limits apply)."""
    return not spec.is_exact and device.type == "cuda"


def clamp_to_gpu_limits(settings: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``settings`` with ``nprobe`` capped at faiss-gpu's limit, and a note when any was.

    Values above the limit collapse onto it (once, where it first appears).
    """
    clamped: list[dict[str, Any]] = []
    over = [s["nprobe"] for s in settings if s.get("nprobe", 0) > GPU_MAX_SELECTION]
    for setting in settings:
        if setting.get("nprobe", 0) > GPU_MAX_SELECTION:
            setting = {**setting, "nprobe": GPU_MAX_SELECTION}
        if setting not in clamped:
            clamped.append(setting)
    notes = []
    if over:
        notes.append(
            f"nprobe {', '.join(str(v) for v in over)} exceed faiss-gpu's limit of {GPU_MAX_SELECTION} "
            f"on GPU indexes; swept nprobe = {GPU_MAX_SELECTION} instead"
        )
    return clamped, notes


def run_sweep(
    specs: Sequence[IndexSpec],
    corpus: torch.Tensor,
    queries: torch.Tensor,
    exact_indices: torch.Tensor,
    k: int,
    device: torch.device,
    grids: Mapping[str, Sequence[Any]] | None = None,
    repeats: int = 3,
    warmup: int = 1,
    built: Mapping[IndexSpec, SearchIndex] | None = None,
) -> SweepResult:
    """Sweep every spec over its grid; ``built`` reuses already built indexes.

    ``corpus`` and ``queries`` must be on ``device``.
    """
    result = SweepResult(k=k, metric=specs[0].metric if specs else "ip", device=str(device), queries=int(queries.shape[0]))
    cache: dict[IndexSpec, SearchIndex] = dict(built or {})
    # Up front: a k faiss-gpu cannot select fails before any index is built.
    for spec in specs:
        check_gpu_search_limits(runs_on_faiss_gpu(spec, device), k, None)
    for spec in specs:
        grid = default_grid(spec, grids)
        if runs_on_faiss_gpu(spec, device):
            grid, notes = clamp_to_gpu_limits(grid)
            result.notes.extend(f"{spec.factory}: {note}" for note in notes)
        for setting in grid:
            target = spec.with_dtype(setting["dtype"]) if "dtype" in setting else spec
            if target not in cache:
                cache[target] = build_index(target, corpus, device).index
            index = cache[target]
            params = {name: value for name, value in setting.items() if name != "dtype"}
            measured = measure_throughput(lambda q: index.search(q, k, **params), queries, device, repeats, warmup)
            recall = recall_at_k(measured.output[1], exact_indices, k)
            result.points.append(
                SweepPoint(spec.factory, dict(setting), recall, measured.qps, measured.median_seconds)
            )
        # A finished spec's indexes are dropped unless the caller owns them.
        for key in [key for key in cache if key.factory == spec.factory and key not in (built or {})]:
            del cache[key]
    result.mark_fronts()
    return result
