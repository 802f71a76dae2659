"""Memory axis: index size in memory and on disk, and peak allocation.

* index bytes: ``index.memory_bytes()`` (vectors, norms, ids, faiss codes,
  lists and graphs), reported as device bytes when the index lives on a
  GPU and host bytes otherwise; ``bytes_per_vector = memory_bytes / N``.
* size on disk: the index is saved to a temporary directory and the file
  measured with ``os.path.getsize``.
* peak allocation during a step (build, search), by method:

  - CUDA: ``torch.cuda.max_memory_allocated`` after a peak reset, minus
    the allocation before the step (torch's allocator only; faiss GPU
    memory is outside it, so the device-wide ``torch.cuda.mem_get_info``
    change is reported next to it);
  - CPU (Linux): the resident-set high-water mark ``VmHWM`` after resetting
    it through ``/proc/self/clear_refs``, minus the resident set before the
    step; memory the allocator reuses without new page faults is not seen;
  - CPU elsewhere: ``tracemalloc`` peak (Python and NumPy allocations only,
    not torch's CPU allocator).
"""
from __future__ import annotations

import gc
import os
import tempfile
import tracemalloc
from typing import Any

import torch

from gpukit.index import SearchIndex

CUDA_METHOD = "torch.cuda.max_memory_allocated minus allocation before the step (torch allocator only)"
RSS_METHOD = "RSS high-water mark (VmHWM, reset via /proc/self/clear_refs) minus RSS before the step"
TRACEMALLOC_METHOD = "tracemalloc peak (Python and NumPy allocations only; torch CPU tensors not seen)"


def _proc_status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (Linux), in KiB."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_rss_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        return False
    return _proc_status_kib("VmHWM") is not None


class PeakMemory:
    """Context manager measuring the peak allocation of the enclosed step.

    After the block, :attr:`peak_bytes` and :attr:`method` are set, and on
    CUDA also :attr:`device_used_delta_bytes`.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.peak_bytes: int | None = None
        self.method = ""
        self.device_used_delta_bytes: int | None = None
        self._before = 0
        self._free_before = 0
        self._tracing = False

    def __enter__(self) -> "PeakMemory":
        # Garbage left by earlier code counts in the baseline; a collection
        # during the step would free it and hide the step's own allocation
        # under that baseline. Collect it first.
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._before = torch.cuda.memory_allocated(self.device)
            self._free_before = torch.cuda.mem_get_info(self.device)[0]
            self.method = CUDA_METHOD
        elif _reset_rss_peak():
            self._before = (_proc_status_kib("VmRSS") or 0) * 1024
            self.method = RSS_METHOD
        else:
            self._tracing = not tracemalloc.is_tracing()
            if self._tracing:
                tracemalloc.start()
            tracemalloc.reset_peak()
            self._before = tracemalloc.get_traced_memory()[0]
            self.method = TRACEMALLOC_METHOD
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = max(0, torch.cuda.max_memory_allocated(self.device) - self._before)
            self.device_used_delta_bytes = self._free_before - torch.cuda.mem_get_info(self.device)[0]
        elif self.method == RSS_METHOD:
            self.peak_bytes = max(0, (_proc_status_kib("VmHWM") or 0) * 1024 - self._before)
        else:
            self.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - self._before)
            if self._tracing:
                tracemalloc.stop()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bytes": self.peak_bytes, "method": self.method}
        if self.device_used_delta_bytes is not None:
            out["device_used_delta_bytes"] = self.device_used_delta_bytes
        return out


def disk_bytes(index: SearchIndex) -> int:
    """Size of ``index.save(...)`` in bytes, saved to a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="gpukit-bench-") as folder:
        path = os.path.join(folder, "index.pt")
        index.save(path)
        return os.path.getsize(path)


def index_memory(index: SearchIndex) -> dict[str, Any]:
    """Index bytes on the device and on the host, and bytes per vector."""
    total = int(index.memory_bytes())
    on_device = index.device.type != "cpu"
    return {
        "index_bytes": total,
        "device_bytes": total if on_device else 0,
        "host_bytes": 0 if on_device else total,
        "vectors": index.ntotal,
        "bytes_per_vector": total / index.ntotal if index.ntotal else None,
        "source": f"{type(index).__name__}.memory_bytes()",
    }
