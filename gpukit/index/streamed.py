"""Exact search over vectors that stay on the host, streamed through the device in blocks.

The corpus is a ``.npy`` file (``write_vectors``) memory-mapped read-only:
fp32 as float32, fp16 as float16, bf16 as its raw 16-bit patterns (uint16;
NumPy has no bfloat16). A search copies one block of rows at a time to the
device, scores it exactly as :class:`~gpukit.index.ExactIndex` scores its
stored chunks (same rounding, same upcast, same tie-aware merge), so the
result equals an ExactIndex holding the same vectors (added in the same
dtype) searched with the same block sizes, and with any block sizes when the
scores do not depend on the block shape.

Copies. On CUDA (``overlap="auto"`` or ``True``) blocks go through
:class:`~gpukit.index.prefetch.BlockPrefetcher`: two pinned host staging
buffers, copies on a side stream with ``non_blocking=True``, block i+1
copied while block i is scored, events so that no buffer is overwritten
before the work that read it has finished. That costs a second device block
(and two pinned host blocks of the same size). On the CPU, or with
``overlap=False``, each block is copied synchronously when it is scored;
``overlap=True`` on the CPU runs the prefetcher with real (synchronous)
copies. The copies do not change a number: results are bit-identical with
overlap on or off.

Device memory per search (:meth:`HostStreamedIndex.device_bytes`, checked
against ``max_memory`` before searching)::

    chunk * d * (storage bytes * blocks + 4 upcast/normalise + 4 if l2)    streamed rows
  + query_batch * chunk * 9                                               score block
  + Q * d * 4 * 2                                                         queries, rounded queries
  + Q * k * 12 * 3                                                        running and merged top-k

``blocks`` is 2 when the copies overlap, else 1. With ``overlap="auto"`` the
planner sizes the blocks so that two fit; when explicit block sizes fit the
budget only once, the search copies synchronously (``last_overlap`` says
which ran); ``overlap=True`` refuses them instead.

Cosine: the file must hold the unit vectors, normalised in float32 before
rounding, as ExactIndex stores them: ``write_vectors(..., metric="cosine")``
writes them so (rows are not re-normalised per search; the queries are).
"""
from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Literal

import numpy as np
import torch
import torch.nn.functional as F

from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import IndexFileError
from gpukit.index.base import IndexUsageError, check_metric
from gpukit.index.exact import BYTES_PER_SCORE, ExactIndex, parse_dtype
from gpukit.index.memory import BlockPlan, memory_budget, plan_blocks
from gpukit.index.prefetch import BlockPrefetcher, copy_backend

_FILE_DTYPES = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: np.uint16}
# Per element of a top-k list: a float32 score and an int64 position.
TOPK_BYTES = 4 + 8


def write_vectors(path: str | os.PathLike, vectors: torch.Tensor, dtype: torch.dtype | str = "fp16", metric: str = "ip") -> None:
    """Save ``(N, d)`` vectors rounded to ``dtype`` (first L2-normalised in
    float32 for ``metric="cosine"``) as a ``.npy`` file :class:`HostStreamedIndex` maps."""
    dtype = parse_dtype(dtype)
    vectors = vectors.detach().to("cpu")
    if check_metric(metric) == "cosine":
        vectors = F.normalize(vectors.float(), dim=1)
    stored = vectors.to(dtype).contiguous()
    if dtype == torch.bfloat16:
        stored = stored.view(torch.int16)  # same bits; NumPy has no bfloat16
    np.save(path, stored.numpy().view(_FILE_DTYPES[dtype]))


class HostStreamedIndex(ExactIndex):
    """Exact search of a memory-mapped host file through a bounded device budget (module docstring).

    Args:
        path: ``.npy`` file written by :func:`write_vectors` (or ``numpy.save``).
        metric: ``"ip"``, ``"cosine"`` or ``"l2"``.
        dtype: the file's dtype (``fp32``, ``fp16``, ``bf16``).
        device: where blocks are scored.
        max_memory: device bytes one search may use (default as ExactIndex).
        chunk_size, query_batch_size: explicit block sizes (checked against the budget).
        overlap: ``"auto"`` (overlapped copies on CUDA when two blocks fit), ``True`` or ``False``.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        metric: str = "ip",
        dtype: torch.dtype | str = "fp16",
        device: DeviceLike = "auto",
        max_memory: int | None = None,
        chunk_size: int | None = None,
        query_batch_size: int | None = None,
        overlap: bool | Literal["auto"] = "auto",
    ) -> None:
        if not (isinstance(overlap, bool) or overlap == "auto"):
            raise IndexUsageError(f"overlap must be 'auto', True or False; got {overlap!r}")
        dtype = parse_dtype(dtype)
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexFileError(f"{path}: cannot map as .npy ({exc})") from exc
        if array.ndim != 2 or array.dtype != _FILE_DTYPES[dtype]:
            raise IndexFileError(f"{path}: expected a 2-D {np.dtype(_FILE_DTYPES[dtype]).name} array for {dtype}; got {array.dtype} {array.shape}")
        super().__init__(int(array.shape[1]), check_metric(metric), dtype, resolve_device(device), max_memory, chunk_size, query_batch_size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # read-only mapping; never written
            host = torch.from_numpy(array.view(np.int16) if dtype == torch.bfloat16 else array)
        self._host = host.view(dtype) if dtype == torch.bfloat16 else host
        self.overlap = overlap
        self.last_plan: BlockPlan | None = None
        self.last_overlap: bool | None = None  # whether the last search overlapped its copies

    @property
    def ntotal(self) -> int:
        return int(self._host.shape[0])

    def memory_bytes(self) -> int:
        return 0  # nothing is held on the device between searches

    def add(self, embeddings: Any, ids: Any = None) -> None:
        raise IndexUsageError("HostStreamedIndex reads its vectors from its file; write them with write_vectors")

    def search(self, queries: Any, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.rescore_fp32:
            raise IndexUsageError("rescore_fp32 is not supported by HostStreamedIndex")
        return super().search(queries, k)

    def _row_bytes(self, overlapped: bool) -> int:
        blocks = 2 if overlapped else 1
        return self.dim * (self._host.element_size() * blocks + 4 + (4 if self.metric == "l2" else 0))

    def _auto_overlap(self) -> bool:
        """Whether ``overlap="auto"`` tries overlapped copies: on CUDA (pinned memory, streams)."""
        return self.device.type == "cuda"

    def _plan(self, n_queries: int, k: int, compute_dtype: torch.dtype) -> BlockPlan:
        """Blocks within the budget, counting two in-flight blocks when overlapping
        (``"auto"``: overlapped if two fit, else synchronous)."""
        budget = memory_budget(self.device, self.max_memory)
        if self.overlap == "auto":
            modes = (True, False) if self._auto_overlap() else (False,)
        else:
            modes = (bool(self.overlap),)
        for overlapped in modes:
            last = overlapped == modes[-1]
            try:
                plan = plan_blocks(
                    n_queries=n_queries,
                    n_docs=self.ntotal,
                    bytes_per_score=BYTES_PER_SCORE,
                    bytes_per_doc_row=self._row_bytes(overlapped),
                    budget=budget - self._fixed_bytes(n_queries, k),
                    chunk_size=self.chunk_size,
                    query_batch=self.query_batch_size,
                )
            except IndexUsageError:
                if last:
                    raise
                continue
            needed = self.device_bytes(n_queries, k, plan, overlapped)
            if needed <= budget:  # explicit block sizes can overshoot
                self.last_plan, self.last_overlap = plan, overlapped
                return plan
        blocks = "two in-flight blocks (overlap=True; overlap=False needs one)" if overlapped else "one block"
        raise IndexUsageError(
            f"blocks of {plan.query_batch} queries x {plan.corpus_chunk} rows with {blocks} need "
            f"{needed} device bytes, over the budget of {budget}"
        )

    def _fixed_bytes(self, n_queries: int, k: int) -> int:
        """Queries (fp32 and rounded) and the running, new and merged top-k lists."""
        return n_queries * self.dim * 4 * 2 + n_queries * k * TOPK_BYTES * 3

    def device_bytes(self, n_queries: int, k: int, plan: BlockPlan | None = None, overlapped: bool | None = None) -> int:
        """Accounted device bytes of one search with ``plan`` and copy mode (default: the last search's)."""
        plan = plan or self.last_plan
        overlapped = self.last_overlap if overlapped is None else overlapped
        if plan is None or overlapped is None:
            raise IndexUsageError("no search has been planned yet")
        return (
            plan.corpus_chunk * self._row_bytes(overlapped)
            + plan.query_batch * plan.corpus_chunk * BYTES_PER_SCORE
            + self._fixed_bytes(n_queries, k)
        )

    @contextmanager
    def _corpus_blocks(
        self, rows_per_block: int, compute_dtype: torch.dtype
    ) -> Iterator[Iterable[tuple[int, torch.Tensor, torch.Tensor | None]]]:
        if not self.last_overlap:  # set by _plan, which the scan calls first
            with super()._corpus_blocks(rows_per_block, compute_dtype) as blocks:
                yield blocks
            return
        with BlockPrefetcher(self._host, rows_per_block, copy_backend(self.device)) as prefetcher:
            yield ((start, *self._prepared(rows, compute_dtype)) for start, rows in prefetcher)

    def _chunk(self, start: int, stop: int, compute_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self._prepared(self._host[start:stop].to(self.device), compute_dtype)

    def _prepared(self, rows: torch.Tensor, compute_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Streamed rows on the device, as ExactIndex scores its chunks: upcast, and L2 norms."""
        norms = self._squared_norms(rows) if self.metric == "l2" else None
        return rows.to(compute_dtype), norms

    def _state(self) -> dict[str, Any]:
        raise IndexUsageError("HostStreamedIndex is its file: keep the .npy, not a saved index")
