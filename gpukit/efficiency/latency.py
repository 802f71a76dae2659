"""Latency axis: per-call time of a search at fixed batch sizes.

For a batch size ``b`` the search is called on ``b`` consecutive queries at a
time (a window sliding over the query set, wrapping to its start), after
``warmup`` untimed calls of that shape (first calls allocate workspaces and
pick kernels). Reported per batch size: p50 / p95 / p99 / mean of the
per-call latency in milliseconds and the p50 per query, ``p50 / b``.
Latency is a recurring, per-request cost: it is never added to build or
infrastructure figures.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import torch

from gpukit.efficiency.timing import percentiles, time_call
from gpukit.errors import UsageError

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 32, 256, 4096)


@dataclass(frozen=True)
class LatencyStats:
    """Latency of one batch size; times in milliseconds per call."""

    batch_size: int
    samples: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    per_query_p50_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clip_batch_sizes(batch_sizes: Sequence[int], n_queries: int) -> list[int]:
    """Batch sizes capped at the number of queries, deduplicated, ascending."""
    if n_queries < 1:
        raise UsageError("no queries to time")
    if not batch_sizes or any(int(b) < 1 for b in batch_sizes):
        raise UsageError(f"batch sizes must be positive integers; got {list(batch_sizes)}")
    return sorted({min(int(b), n_queries) for b in batch_sizes})


def measure_latency(
    search: Callable[[torch.Tensor], Any],
    queries: torch.Tensor,
    device: torch.device,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    warmup: int = 2,
    min_calls: int = 5,
    max_calls: int = 200,
    time_budget_s: float = 2.0,
) -> list[LatencyStats]:
    """Time ``search(batch)`` per batch size (see the module docstring).

    Each batch size gets at least ``min_calls`` timed calls and at most
    ``max_calls``; between the two it stops once ``time_budget_s`` seconds
    of calls have run, so large batches on slow devices stay bounded.
    """
    n = queries.shape[0]
    out = []
    for b in clip_batch_sizes(batch_sizes, n):
        # Window starts that keep the slice inside the tensor: slices are
        # views, so no gather is timed with the search.
        span = n - b + 1

        def batch(i: int, b: int = b, span: int = span) -> torch.Tensor:
            start = (i * b) % span
            return queries[start : start + b]

        for i in range(warmup):
            time_call(lambda: search(batch(i)), device)
        samples: list[float] = []
        began = time.perf_counter()
        while len(samples) < max_calls and (
            len(samples) < min_calls or time.perf_counter() - began < time_budget_s
        ):
            i = len(samples)
            seconds, _ = time_call(lambda: search(batch(i)), device)
            samples.append(seconds * 1e3)
        p50, p95, p99 = percentiles(samples)
        out.append(
            LatencyStats(
                batch_size=b,
                samples=len(samples),
                p50_ms=p50,
                p95_ms=p95,
                p99_ms=p99,
                mean_ms=sum(samples) / len(samples),
                per_query_p50_ms=p50 / b,
            )
        )
    return out
