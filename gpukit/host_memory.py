"""Host allocator settings for a program that builds and drops large arrays (no torch).

Reading and ranking a large run allocates and frees many arrays of tens to
hundreds of MB (parsed columns, doc keys, the (Q, K) layout). glibc's malloc
serves each allocation above its mmap threshold (128 KiB, raised as it goes
up to 32 MiB) with freshly mapped pages and unmaps them when freed, so every
such array faults its pages in anew: `gpukit eval` on 100k queries x 100
took 320k minor page faults and ~2 s of system time on the 2-core VM,
against ~4.5 s of user time (docs/benchmarks.md, "Seventh pass").

:func:`keep_freed_memory` makes malloc serve them from its heap and keep
what is freed for the next allocation instead: one arena for all threads,
an mmap threshold of 1 GiB, and freed memory trimmed only beyond 2 GiB.
These are process-wide settings, so only a program calls this (``gpukit
eval``), never a library function: a caller embedding gpukit keeps its own
allocator behaviour. Values never depend on it.

:func:`no_huge_page_advice` stops NumPy from asking the kernel for huge
pages (``madvise(MADV_HUGEPAGE)``) for its arrays of 4 MiB or more. A huge
page needs 2 MiB of contiguous memory; on a virtual machine whose host backs
guest memory lazily, that memory has often not been touched lately and its
fault costs far more than the 4 KiB pages that were freed a moment ago:
filling eight fresh 32 MiB arrays took 100-280 ms each with huge pages
against 13-20 ms without, in that state (5 ms with huge pages when they were
at hand; bench/bench_huge_pages.py). `gpukit eval` on 100k queries x 100, paired: 2.66 s against
3.74 s wall, system time 0.93 against 1.96 s (docs/benchmarks.md, "Eighth
pass"). Also process-wide, also for a program only.
"""
from __future__ import annotations

import ctypes
import platform

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

#: Allocations up to this size come from the heap (mallopt takes an int).
MMAP_THRESHOLD_BYTES = 1 << 30
#: Freed memory at the heap's top is returned to the system only beyond this.
TRIM_THRESHOLD_BYTES = (1 << 31) - 1


def keep_freed_memory() -> bool:
    """Set glibc malloc to reuse freed memory rather than map fresh pages
    (see the module docstring). Returns whether the settings were applied:
    False where the C library is not glibc or refuses one of them. Call it
    early, before threads that allocate are started (a thread's arena is
    chosen at its first allocation)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - no symbol table to search
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    return all([mallopt(param, value) == 1 for param, value in settings])


def no_huge_page_advice() -> bool:
    """Stop NumPy advising huge pages for its large arrays (see the module
    docstring); what ``NUMPY_MADVISE_HUGEPAGE=0`` does when set before NumPy
    is imported. Returns whether it was applied: False where this NumPy has
    no such switch. Arrays allocated before keep their pages."""
    # A private NumPy switch (numpy/_core/multiarray): if it moves or changes, nothing is set.
    try:
        from numpy._core.multiarray import _set_madvise_hugepage

        _set_madvise_hugepage(False)
    except (ImportError, TypeError):  # pragma: no cover - a NumPy without this switch
        return False
    return True
