"""Double-buffered host-to-device block copies: block i+1 is copied while block i is scored.

:class:`BlockPrefetcher` walks the rows of a host tensor in blocks and
yields each block on the device. It holds two host staging buffers (pinned
on CUDA, so the copy engine reads them while the host works) and two device
buffers; block ``i`` uses slot ``s = i % 2``. Copies run on a side stream,
scoring on the caller's (current) stream, and events order the two::

    at start, per slot j: record compute_done[j] on compute       (the memory is free there)
    for block i, slot s, next slot t:
        if i > 0: record compute_done[previous slot] on compute  (the caller queued block i-1)
        if block i+1 exists:
            host waits copy_done[t]            (the DMA out of staging t, block i-1, is over)
            staging[t] <- host rows of i+1     (host memcpy)
            copy stream waits compute_done[t]  (the scoring of block i-1 read device[t])
            device[t] <- staging[t], non_blocking, on the copy stream; record copy_done[t]
        compute stream waits copy_done[s]; yield device[s]

So the copy of block i+1 is queued before block i's scoring, a device
buffer is overwritten only after the scoring that read it, and a staging
buffer only after the copy that read it. Host synchronisation: one event
wait per block from the third on (on the copy queued a block earlier; it
stalls the host only when the copy engine is behind), none at the end; an
error (in the caller or here) drains the copy stream once before it
propagates. The device buffers are marked used by the copy stream
(``record_stream``), so the caching allocator does not hand their memory to
other work before those copies end; PyTorch records the same for the pinned
staging memory of each non-blocking copy.

Memory: two device blocks and two pinned host blocks of ``rows_per_block``
rows (the caller's budget counts both device blocks).

The stream, event and allocation operations go through a small backend
(:class:`CudaCopies`, or :class:`HostCopies`: real synchronous copies with
no streams, for the CPU), so the schedule is tested on the CPU with a
backend that records every operation (``tests/index/test_prefetch.py``).
"""
from __future__ import annotations

from typing import Any, Iterator, Protocol

import torch

from gpukit.errors import IndexUsageError

COPY = "copy"
COMPUTE = "compute"
SLOTS = 2


class CopyBackend(Protocol):
    """Allocations, copies and stream/event operations of :class:`BlockPrefetcher`."""

    def staging_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor: ...
    def device_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor: ...
    def event(self) -> Any: ...
    def fill(self, staging: torch.Tensor, rows: torch.Tensor) -> None: ...
    def copy(self, device: torch.Tensor, staging: torch.Tensor) -> None: ...
    def record(self, event: Any, stream: str) -> None: ...
    def wait(self, stream: str, event: Any) -> None: ...
    def host_wait(self, event: Any) -> None: ...
    def synchronize(self) -> None: ...


class HostCopies:
    """The host as the device: real copies, run synchronously, so no stream or event does anything."""

    def staging_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype)

    def device_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype)

    def event(self) -> Any:
        return None

    def fill(self, staging: torch.Tensor, rows: torch.Tensor) -> None:
        staging.copy_(rows)

    def copy(self, device: torch.Tensor, staging: torch.Tensor) -> None:
        device.copy_(staging)

    def record(self, event: Any, stream: str) -> None:
        pass

    def wait(self, stream: str, event: Any) -> None:
        pass

    def host_wait(self, event: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass


class CudaCopies(HostCopies):
    """Pinned staging buffers, copies on a side stream; scoring stays on the current stream."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.streams = {COMPUTE: torch.cuda.current_stream(device), COPY: torch.cuda.Stream(device)}

    def staging_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, pin_memory=True)

    def device_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        buffer = torch.empty(shape, dtype=dtype, device=self.device)  # allocated on the compute stream
        buffer.record_stream(self.streams[COPY])
        return buffer

    def event(self) -> Any:
        return torch.cuda.Event()

    def copy(self, device: torch.Tensor, staging: torch.Tensor) -> None:
        with torch.cuda.stream(self.streams[COPY]):
            device.copy_(staging, non_blocking=True)

    def record(self, event: Any, stream: str) -> None:
        event.record(self.streams[stream])

    def wait(self, stream: str, event: Any) -> None:
        self.streams[stream].wait_event(event)

    def host_wait(self, event: Any) -> None:
        event.synchronize()

    def synchronize(self) -> None:
        self.streams[COMPUTE].wait_stream(self.streams[COPY])
        self.streams[COPY].synchronize()


def copy_backend(device: torch.device) -> CopyBackend:
    """Overlapped copies on CUDA; real synchronous copies elsewhere."""
    return CudaCopies(device) if device.type == "cuda" else HostCopies()


class BlockPrefetcher:
    """``(start, rows on the device)`` per block of ``rows_per_block`` rows of ``source`` (module docstring).

    Use as a context manager around the iteration: leaving it early or on an
    error drains the copies in flight. A yielded block is valid until the
    next one is requested (its buffer is then refilled).
    """

    def __init__(self, source: torch.Tensor, rows_per_block: int, copies: CopyBackend) -> None:
        if rows_per_block < 1:
            raise IndexUsageError(f"rows_per_block must be positive; got {rows_per_block}")
        self.source = source
        self.rows_per_block = rows_per_block
        self.copies = copies
        self._open = False  # copies may be in flight

    def __enter__(self) -> "BlockPrefetcher":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._drain()

    def _drain(self) -> None:
        if self._open:
            self._open = False
            self.copies.synchronize()

    def __iter__(self) -> Iterator[tuple[int, torch.Tensor]]:
        copies, source, step = self.copies, self.source, self.rows_per_block
        n = source.shape[0]
        starts = range(0, n, step)
        if not starts:
            return
        shape = (min(step, n), *source.shape[1:])
        slots = range(min(SLOTS, len(starts)))
        staging = [copies.staging_buffer(shape, source.dtype) for _ in slots]
        device = [copies.device_buffer(shape, source.dtype) for _ in slots]
        compute_done = [copies.event() for _ in slots]
        copy_done = [copies.event() for _ in slots]
        copied = [False for _ in slots]  # a copy out of this staging buffer was queued
        self._open = True
        for slot in slots:
            copies.record(compute_done[slot], COMPUTE)

        def issue(block: int) -> None:
            slot, start = block % SLOTS, starts[block]
            rows = min(start + step, n) - start
            if copied[slot]:
                copies.host_wait(copy_done[slot])
            copies.fill(staging[slot][:rows], source[start : start + rows])
            copies.wait(COPY, compute_done[slot])
            copies.copy(device[slot][:rows], staging[slot][:rows])
            copies.record(copy_done[slot], COPY)
            copied[slot] = True

        try:
            issue(0)
            for block, start in enumerate(starts):
                slot = block % SLOTS
                if block:
                    copies.record(compute_done[(block - 1) % SLOTS], COMPUTE)
                if block + 1 < len(starts):
                    issue(block + 1)
                copies.wait(COMPUTE, copy_done[slot])
                yield start, device[slot][: min(start + step, n) - start]
        except Exception:
            self._drain()
            raise
        # Every copy was waited for by the compute stream: nothing to drain.
        self._open = False
