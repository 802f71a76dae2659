"""Whether every core this process may run on already has work (no torch).

Used to choose thread counts (:mod:`gpukit.threads`) and whether a second
thread may read a file ahead (:mod:`gpukit.data.run_texts`); the latter runs
before torch is imported, hence a module of its own.
"""
from __future__ import annotations

import os


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
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return load >= cores
