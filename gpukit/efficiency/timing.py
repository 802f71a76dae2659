"""Device-synchronised wall-clock timing and percentiles.

A GPU call returns before its kernels finish, so timing it with a host clock
alone measures the launch, not the work. On CUDA every timed call is
bracketed by CUDA events and the device is synchronised before the closing
event is recorded, so work that libraries (faiss) queue on other streams is
inside the interval too. On CPU, ``time.perf_counter`` is used.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from gpukit.errors import UsageError

#: How each timer measures, as stated in reports.
CUDA_TIMER = "CUDA events around the call, device synchronised before the closing event"
CPU_TIMER = "time.perf_counter around the call"


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timer_description(device: torch.device) -> str:
    return CUDA_TIMER if device.type == "cuda" else CPU_TIMER


def time_call(fn: Callable[[], Any], device: torch.device) -> tuple[float, Any]:
    """Run ``fn()`` once; return ``(seconds, result)`` with the device synchronised."""
    if device.type == "cuda":
        # Earlier work must not leak into this interval.
        torch.cuda.synchronize(device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        result = fn()
        # Synchronise the whole device first: faiss may run on its own stream,
        # which an event on torch's current stream would not wait for.
        torch.cuda.synchronize(device)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, result
    begin = time.perf_counter()
    result = fn()
    return time.perf_counter() - begin, result


def percentiles(samples: Sequence[float], qs: Sequence[float] = (50, 95, 99)) -> list[float]:
    """Linear-interpolation percentiles (numpy's default), monotone in ``qs``.

    For sorted samples ``x_(0) <= ... <= x_(n-1)`` the q-th percentile is
    ``x_(h)`` interpolated at ``h = (n - 1) q / 100``, so p50 <= p95 <= p99.
    """
    if not samples:
        raise UsageError("percentiles of an empty sample")
    return [float(v) for v in np.percentile(np.asarray(samples, dtype=np.float64), list(qs))]


def median(samples: Sequence[float]) -> float:
    return percentiles(samples, (50,))[0]
