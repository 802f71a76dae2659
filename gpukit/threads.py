"""Torch's intra-op thread count chosen by the size of the work.

On small tensors (a TREC track: ~100 topics x 1,000 documents) an OpenMP
parallel region costs more than it saves, and on a busy machine it waits
for a descheduled worker: single ops measured 5-36 ms with 2 threads
against 0.1-0.8 ms with 1 (docs/benchmarks.md, "The everyday case").
:func:`threads_for` therefore runs work below :data:`SMALL_WORK` ranked
entries with one thread. Binary searches are the exception: at tens of
nanoseconds per needle they gain from the pool from :data:`SEARCH_WORK`
needles, so :func:`search_threads` gives a block of them the count that
:func:`threads_for` took away.

``torch.set_num_threads`` is process-global: while the block runs, every
thread of the process computes with the count it sets. The caller's count is
restored when the block ends, normally or by an exception; it is never left
changed. A caller running torch work concurrently in other threads, or
wanting its own count honoured, passes ``adapt=False``.
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import torch

# Re-exported: the thread choice below looks it up here (tests replace it here).
from gpukit.machine_load import free_cores, machine_busy  # noqa: F401

F = TypeVar("F", bound=Callable)

#: Ranked entries (topics x ranking depth) below which one intra-op thread
#: is faster than torch's pool on CPU, busy or not (docs/benchmarks.md,
#: "Torch threads by work size": one thread won by >= 1.25x up to 10^6).
SMALL_WORK = 1_000_000
#: Below this, one thread also while the machine is busy (:func:`machine_busy`):
#: at 10^7 entries (100k queries x 100) one thread took 0.79x the wall of the
#: pool at load 4-6 on the 2-core VM ("Fifth pass"), while on the nearly idle
#: VM two threads were 20-40% faster on 10^7-entry updates (section
#: "torchmetrics"), so the pool is kept there when the cores are free.
BUSY_WORK = 20_000_000
#: Binary searches (needles) from which :func:`search_threads` gives back the
#: pool that :func:`threads_for` took away: a search costs ~25-50 ns per
#: needle in mispredicted branches, tens of times an elementwise op, so two
#: threads pay on a TREC track's 10^5 (4.7 -> 2.6 ms) and already on 10^4
#: (0.43 -> 0.13 ms); below that torch's own grain size keeps one thread
#: (docs/benchmarks.md, "Ninth pass").
SEARCH_WORK = 10_000

# The caller's count while a threads_for block runs with fewer threads (per
# calling thread: a block lowers the count for the block's own work).
_lowered = threading.local()


def threads_wanted(work: int, device: torch.device | str = "cpu", current: int | None = None) -> int:
    """The intra-op thread count for ``work`` ranked entries on ``device``:
    1 on CPU below :data:`SMALL_WORK`, and below :data:`BUSY_WORK` while
    :func:`machine_busy`; else ``current`` (default: torch's present count).
    CUDA kernels do not use the CPU pool, so a CUDA device keeps the present
    count too. The count changes speed only, never a value."""
    current = torch.get_num_threads() if current is None else current
    if torch.device(device).type == "cpu" and (work < SMALL_WORK or (work < BUSY_WORK and machine_busy())):
        return 1
    return current


@contextmanager
def threads_for(work: int, device: torch.device | str = "cpu", *, adapt: bool = True) -> Iterator[int]:
    """Run the block with :func:`threads_wanted` intra-op threads; yields
    the count in force. The previous count is restored on exit, also when
    the block raises. ``adapt=False`` changes nothing."""
    before = torch.get_num_threads()
    wanted = threads_wanted(work, device, before) if adapt else before
    if wanted != before:
        torch.set_num_threads(wanted)
    outer = getattr(_lowered, "count", None)
    if wanted < before:
        _lowered.count = max(before, outer or 0)
    try:
        yield wanted
    finally:
        _lowered.count = outer
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextmanager
def search_threads(needles: int, device: torch.device | str = "cpu") -> Iterator[int]:
    """Run a block of binary searches (``needles`` of them) with the intra-op
    threads that an enclosing :func:`threads_for` block took away for its small
    elementwise work; yields the count in force. Only on CPU, from
    :data:`SEARCH_WORK` needles, while the machine is not busy, and no more
    threads than the cores gpukit's own background work leaves free
    (:func:`gpukit.machine_load.free_cores`: while the read-ahead worker
    parses the next run on a 2-core machine, none). Outside such a block (no
    count was lowered, or ``adapt=False``) nothing changes. The count is
    restored on exit; search results do not depend on it."""
    now = torch.get_num_threads()
    caller = getattr(_lowered, "count", None)
    if caller is None or caller <= now or torch.device(device).type != "cpu" or needles < SEARCH_WORK:
        yield now
        return
    wanted = min(caller, free_cores())
    if wanted <= now or machine_busy():
        yield now
        return
    torch.set_num_threads(wanted)
    try:
        yield wanted
    finally:
        torch.set_num_threads(now)


def sized_threads(work_of: Callable[..., int]) -> Callable[[F], F]:
    """Decorator: run the function under ``threads_for(work_of(*args, **kwargs))``
    on CPU (for builders whose inputs are host arrays, e.g. a run's layout
    from its parsed columns)."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with threads_for(work_of(*args, **kwargs)):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
