"""Memory budgets and block sizes for chunked exact search.

Exact search scores a ``(query_batch, corpus_chunk)`` block at a time, so the
working memory is about::

    query_batch * corpus_chunk * bytes_per_score + corpus_chunk * bytes_per_doc_row

and never a full ``Q x N`` score matrix once ``N`` exceeds one chunk. The
budget is ``max_memory`` when given, else half of the free CUDA memory
(``torch.cuda.mem_get_info``) on CUDA, else :data:`DEFAULT_CPU_BUDGET`.
The result tensors (``Q x k``) are outputs and are not counted.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gpukit.index.base import IndexUsageError

DEFAULT_CPU_BUDGET = 256 * 2**20
# Leave room for the allocator, other tensors and other processes.
CUDA_FREE_FRACTION = 0.5
# Large enough to keep the matmul efficient, small enough to leave room for
# long corpus chunks (fewer merges).
DEFAULT_QUERY_BATCH = 1024
# Below this many rows per chunk the per-chunk overhead dominates, so the
# planner shrinks the query batch instead of the chunk.
MIN_PREFERRED_CHUNK = 4096
# Elements per scoring block stay below 2^31: CUDA kernels that index with
# 32-bit integers (scans, some reductions) are wrong or refuse past that.
MAX_BLOCK_ELEMENTS = 2**31 - 1


def memory_budget(device: torch.device, max_memory: int | None) -> int:
    """Working-memory budget in bytes for one search call."""
    if max_memory is not None:
        return int(max_memory)
    if device.type == "cuda":
        free_bytes, _ = torch.cuda.mem_get_info(device)
        return int(free_bytes * CUDA_FREE_FRACTION)
    return DEFAULT_CPU_BUDGET


@dataclass(frozen=True)
class BlockPlan:
    """How many queries and corpus rows one scoring block holds."""

    query_batch: int
    corpus_chunk: int


def plan_blocks(
    n_queries: int,
    n_docs: int,
    bytes_per_score: int,
    bytes_per_doc_row: int,
    budget: int,
    chunk_size: int | None = None,
    query_batch: int | None = None,
) -> BlockPlan:
    """Pick block sizes that fit ``budget``; explicit sizes are taken as given."""

    def chunk_for(batch: int) -> int:
        return budget // (batch * bytes_per_score + bytes_per_doc_row)

    def batch_for(chunk: int) -> int:
        return (budget - chunk * bytes_per_doc_row) // (chunk * bytes_per_score)

    if chunk_size is not None and query_batch is not None:
        batch, chunk = query_batch, chunk_size
    elif chunk_size is not None:
        batch, chunk = batch_for(chunk_size), chunk_size
    elif query_batch is not None:
        batch, chunk = query_batch, chunk_for(query_batch)
    else:
        batch = min(n_queries, DEFAULT_QUERY_BATCH)
        chunk = chunk_for(batch)
        preferred = min(n_docs, MIN_PREFERRED_CHUNK)
        if chunk < preferred:
            chunk, batch = preferred, batch_for(preferred)
            if batch < 1:
                # Too tight even for one query per preferred chunk.
                batch, chunk = 1, chunk_for(1)
    if batch < 1 or chunk < 1:
        raise IndexUsageError(
            f"memory budget of {budget} bytes cannot hold one query against a "
            f"corpus chunk; raise max_memory or lower chunk_size"
        )
    batch, chunk = min(batch, n_queries), min(chunk, n_docs)
    if batch * chunk > MAX_BLOCK_ELEMENTS:
        chunk = max(1, MAX_BLOCK_ELEMENTS // max(batch, 1))
        batch = min(batch, MAX_BLOCK_ELEMENTS // chunk)
    return BlockPlan(query_batch=batch, corpus_chunk=chunk)
