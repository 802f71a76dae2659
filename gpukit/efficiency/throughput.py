"""Throughput axis: queries per second over the full query set.

One search call answers all ``Q`` queries (the index batches internally);
after ``warmup`` untimed calls it is repeated ``repeats`` times and

    qps = Q / median(seconds of the repeats)

The median, not the mean or the best, resists one slow repeat (a page
fault, another process) without rewarding a lucky one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from gpukit.efficiency.timing import median, time_call
from gpukit.errors import UsageError


@dataclass
class ThroughputResult:
    """Timed full-query-set searches; ``output`` is the last search's result."""

    queries: int
    seconds: list[float]
    output: Any = field(repr=False, default=None)

    @property
    def median_seconds(self) -> float:
        return median(self.seconds)

    @property
    def qps(self) -> float:
        return self.queries / self.median_seconds if self.median_seconds > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "repeats": len(self.seconds),
            "seconds": self.seconds,
            "median_seconds": self.median_seconds,
            "qps": self.qps,
        }


def measure_throughput(
    search: Callable[[torch.Tensor], Any],
    queries: torch.Tensor,
    device: torch.device,
    repeats: int = 3,
    warmup: int = 1,
) -> ThroughputResult:
    """Time ``search(queries)`` ``repeats`` times after ``warmup`` calls."""
    if repeats < 1:
        raise UsageError(f"repeats must be >= 1; got {repeats}")
    for _ in range(warmup):
        time_call(lambda: search(queries), device)
    seconds, output = [], None
    for _ in range(repeats):
        elapsed, output = time_call(lambda: search(queries), device)
        seconds.append(elapsed)
    return ThroughputResult(queries=int(queries.shape[0]), seconds=seconds, output=output)
