"""Whether every core this process may run on already has work (no torch).

Used to choose thread counts (:mod:`gpukit.threads`,
:func:`gpukit.data.arrow_numpy.parallel_map`) and whether a second thread may
read a file ahead (:mod:`gpukit.data.run_texts`); the latter runs before
torch is imported, hence a module of its own.

Besides the machine's load, gpukit counts its own background work: while the
read-ahead worker parses a run on one core, a pool of as many threads as
cores on the calling thread only contends with it for the cores (on the
2-core VM, a TREC track's qrels were built 10-20% slower with a 2-thread
pool than with none while a run was parsed; docs/benchmarks.md, "Ninth pass").
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator

_background_threads = 0
_background_lock = threading.Lock()


@contextmanager
def background_work() -> Iterator[None]:
    """Count the calling thread as gpukit background work (one core taken)
    while the block runs, also when it raises."""
    global _background_threads
    with _background_lock:
        _background_threads += 1
    try:
        yield
    finally:
        with _background_lock:
            _background_threads -= 1


def usable_cores() -> int:
    """The processors this process may run on: its CPU affinity
    (``os.sched_getaffinity``) where the platform has one, else ``os.cpu_count``."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_cores() -> int:
    """:func:`usable_cores` less those taken by gpukit's own background work
    (:func:`background_work`), at least 1."""
    return max(1, usable_cores() - _background_threads)


def machine_busy() -> bool:
    """Whether the last minute's load average reaches the processors this
    process may run on (``os.getloadavg`` against ``os.sched_getaffinity``):
    then every core already has a runnable task, and an intra-op pool of
    several threads waits at each op for a descheduled worker. False where
    the load average is unavailable. Choosing threads by it changes speed
    only: CPU matmul, top-k and sorts give the same values with any count."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average on this platform
        return False
    return load >= usable_cores()
