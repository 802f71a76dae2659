"""The device's measured roofline and where a search sits under it.

A short probe in the same run measures two ceilings on the device itself
(not datasheet numbers, which the device may not reach):

* matmul rate ``P`` (FLOP/s): best of a few ``(n x n) @ (n x n)`` products in
  the search's compute dtype, ``2 n^3`` FLOPs each;
* memory bandwidth ``W`` (bytes/s): best of a few ``dst.copy_(src)`` of a
  large buffer, ``2 |src|`` bytes moved each (one read, one write).

For a search that does ``F`` FLOPs and must move at least ``B`` bytes in
``t`` seconds, the roofline bound on its time is ``max(F / P, B / W)`` and

    roofline_fraction = max(F / P, B / W) / t        (1 = at the roofline)

with ``bound`` naming the larger term. Cost models (:func:`exact_search_cost`,
:func:`ivf_flat_search_cost`) give ``F`` and a lower bound on ``B``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch

from gpukit.efficiency.timing import time_call

# Probe sizes: large enough to reach the ceiling, small enough to take well
# under a second (CUDA: ~1 TFLOP of matmul, 1 GiB copies; CPU: ~2 GFLOP, 128 MiB).
CUDA_MATMUL_N = 8192
CPU_MATMUL_N = 1024
CUDA_COPY_BYTES = 2**30
CPU_COPY_BYTES = 128 * 2**20


@dataclass(frozen=True)
class DeviceRoofline:
    """Measured ceilings of one device for one compute dtype."""

    device: str
    dtype: str
    matmul_flops_per_s: float
    memory_bytes_per_s: float
    matmul_n: int
    copy_bytes: int
    repeats: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchCost:
    """FLOPs and (a lower bound on) bytes moved by one search call."""

    flops: float
    bytes: float
    model: str


def probe_roofline(
    device: torch.device,
    dtype: torch.dtype = torch.float32,
    matmul_n: int | None = None,
    copy_bytes: int | None = None,
    repeats: int = 5,
) -> DeviceRoofline:
    """Measure ``P`` and ``W`` on ``device`` (see the module docstring).

    The best of ``repeats`` timed runs is kept (after one warm-up each): a
    ceiling is the fastest the device was seen to go.
    """
    on_cuda = device.type == "cuda"
    n = matmul_n or (CUDA_MATMUL_N if on_cuda else CPU_MATMUL_N)
    size = copy_bytes or (CUDA_COPY_BYTES if on_cuda else CPU_COPY_BYTES)
    return DeviceRoofline(
        device=str(device),
        dtype=str(dtype).removeprefix("torch."),
        matmul_flops_per_s=_matmul_rate(device, dtype, n, repeats),
        memory_bytes_per_s=_copy_rate(device, size, repeats),
        matmul_n=n,
        copy_bytes=size // 4 * 4,
        repeats=repeats,
    )


def _matmul_rate(device: torch.device, dtype: torch.dtype, n: int, repeats: int) -> float:
    """FLOP/s of the fastest ``(n x n) @ (n x n)`` product (``2 n^3`` FLOPs)."""
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, generator=generator).to(dtype)
    b = torch.randn(n, n, device=device, generator=generator).to(dtype)
    return 2.0 * n**3 / _fastest(_best_times(lambda: a @ b, device, repeats))


def _copy_rate(device: torch.device, size: int, repeats: int) -> float:
    """Bytes/s of the fastest ``dst.copy_(src)`` of ``size`` bytes (read + write)."""
    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    moved = 2.0 * src.numel() * src.element_size()
    return moved / _fastest(_best_times(lambda: dst.copy_(src), device, repeats))


def _best_times(fn: Any, device: torch.device, repeats: int) -> list[float]:
    time_call(fn, device)  # warm-up: kernel selection, page faults
    return [time_call(fn, device)[0] for _ in range(max(1, repeats))]


def _fastest(times: list[float]) -> float:
    """Shortest time, floored at 1 ns so a rate is always finite."""
    return max(min(times), 1e-9)


def exact_search_cost(
    n_queries: int, n_docs: int, dim: int, bytes_per_element: int, query_batch: int
) -> SearchCost:
    """Brute-force top-k: ``F = 2 Q N d``; ``B >= N d e`` per query batch.

    Every query batch multiplies against the whole corpus, so the corpus
    (``N d`` elements of ``e`` bytes in the compute dtype) is read at least
    once per batch: ``B = ceil(Q / batch) N d e``. Reading queries and
    writing top-k results is small beside it and left out (lower bound).
    """
    batches = math.ceil(n_queries / max(1, min(query_batch, n_queries)))
    return SearchCost(
        flops=2.0 * n_queries * n_docs * dim,
        bytes=float(batches) * n_docs * dim * bytes_per_element,
        model=f"exact: F = 2*Q*N*d; B >= ceil(Q/{query_batch})*N*d*{bytes_per_element} (corpus read once per query batch)",
    )


def ivf_flat_search_cost(n_queries: int, n_docs: int, dim: int, nlist: int, nprobe: int) -> SearchCost:
    """IVF-Flat estimate assuming balanced lists of ``N / nlist`` vectors.

    Each query scores ``nlist`` centroids and ``nprobe`` lists:
    ``F = 2 Q d (nlist + nprobe N / nlist)``. Bytes, a lower bound as for
    exact search: the centroids and the union of the probed lists, each
    read at least once (fp32), ``B = 4 d (nlist + min(N, Q nprobe N / nlist))``.
    """
    scanned = min(nprobe, nlist) * n_docs / nlist
    return SearchCost(
        flops=2.0 * n_queries * dim * (nlist + scanned),
        bytes=4.0 * dim * (nlist + min(n_docs, n_queries * scanned)),
        model="IVF-Flat estimate, balanced lists: F = 2*Q*d*(nlist + nprobe*N/nlist); B >= 4*d*(nlist + min(N, Q*nprobe*N/nlist))",
    )


def roofline_fraction(cost: SearchCost, seconds: float, roofline: DeviceRoofline) -> dict[str, Any]:
    """Achieved rates and the fraction of the roofline bound (module docstring)."""
    compute_s = cost.flops / roofline.matmul_flops_per_s
    memory_s = cost.bytes / roofline.memory_bytes_per_s
    seconds = max(seconds, 1e-12)
    return {
        "cost_model": cost.model,
        "flops": cost.flops,
        "bytes": cost.bytes,
        "achieved_flops_per_s": cost.flops / seconds,
        "achieved_bytes_per_s": cost.bytes / seconds,
        "arithmetic_intensity_flops_per_byte": cost.flops / cost.bytes if cost.bytes else None,
        "bound": "compute" if compute_s >= memory_s else "memory",
        "roofline_seconds": max(compute_s, memory_s),
        "fraction": max(compute_s, memory_s) / seconds,
    }
