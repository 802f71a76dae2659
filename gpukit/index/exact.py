"""Exact (brute-force) search: chunked matmul + deterministic top-k merge.

Scores, larger is better for every metric:

* ``ip``:     ``s(q, x) = q . x``
* ``cosine``: ``s(q, x) = q . x / (|q| |x|)``; vectors are L2-normalised in
  float32 when added (and stored normalised) and queries when searched.
* ``l2``:     ``s(q, x) = -|q - x|^2 = 2 q.x - |x|^2 - |q|^2``, clamped to
  ``<= 0`` (the expansion can round slightly above zero for near-duplicates).

Precision. Vectors are stored in ``dtype`` (fp32, fp16 or bf16) and queries
are rounded to ``dtype`` too, so a score is the dot product of the rounded
vectors. On CUDA the matmul runs in the storage dtype (tensor cores, fp32
accumulation, result rounded to ``dtype``); on CPU, where half-precision
matmul is slow or unsupported, each corpus chunk is upcast and the product is
computed in float32. Scores are returned as float32.

``rescore_fp32=True`` (fp16/bf16 only) first takes ``k' = rescore_factor * k``
candidates in low precision, then recomputes their scores in float32 from
the *unrounded* float32 queries and the stored vectors upcast to float32
(no second fp32 copy of the corpus is kept), and re-takes the top ``k``.
This removes query rounding and matmul rounding; the storage rounding of
the corpus remains.

Ties: results are ordered by (score desc, index asc), see
:mod:`gpukit.index.topk`: among the scores as computed, equal scores list
the smaller position first whatever the chunk size.

Chunking. The scores themselves can depend on the block shape: BLAS and
cuBLAS choose kernels and summation orders by the matrix shape (and by a
column's place in it), so with float vectors one (query, document) score can
differ between chunk sizes in its last bits (within the rounding error of
the d-term dot product); two equal vectors in different chunks can then
score a few ulps apart and come out in either order. Results are identical
for every chunk size and query batch size when every score is computed
exactly (each product and partial sum representable in the accumulation,
e.g. small integer-valued vectors), and identical for the same block sizes
on the same device and thread settings (the same shapes, the same kernels: what
:class:`~gpukit.index.streamed.HostStreamedIndex`'s equality rests on).
Otherwise two chunkings differ only by such rounding-level score
differences and the order they give to documents that close
(``tests/index/test_exact.py``).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import torch
import torch.nn.functional as F

from gpukit.device import DeviceLike, resolve_device
from gpukit.errors import IndexFileError
from gpukit.index.base import (
    IndexUsageError,
    SearchIndex,
    check_finite,
    check_k,
    check_metric,
    state_tensor,
)
from gpukit.index.memory import BlockPlan, memory_budget, plan_blocks
from gpukit.index.topk import block_topk, empty_topk, merge_topk, sort_by_score_then_index

DTYPE_NAMES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}
STORAGE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Per score element of a block, at most: the matmul result, selected from
# in its own dtype (fp32: 4; bf16/fp16 on CUDA: 2), block_topk's bool
# comparison (1) and tie key (int16: 2; int32 when k is too large for tie
# groups: 4). L2 works in place on the fp32 block.
BYTES_PER_SCORE = 9
# Rows per step when computing squared norms, to bound the fp32 temporary.
NORM_ROWS = 65536
# How far a loaded cosine vector's norm may be from 1: the rounding of a unit
# vector to the storage dtype (bf16 keeps 8 significant bits), with margin.
UNIT_NORM_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 3e-2}


def matmul_dtype(device: torch.device, storage: torch.dtype, metric: str) -> torch.dtype:
    """The dtype the scoring matmul runs in.

    On CUDA inner products run in the storage dtype (tensor cores; fp32
    accumulation, rounded output, fixed by fp32 rescoring). L2 scores are
    ``2<q,d> - |d|^2 - |q|^2``: a rounded product would lose the small
    difference to cancellation, so L2 multiplies upcast fp32 vectors on
    every device, as the CPU does for all metrics.
    """
    if device.type == "cuda" and metric != "l2":
        return storage
    return torch.float32


@contextmanager
def ieee_fp32_matmul() -> Iterator[None]:
    """fp32 matmuls in IEEE fp32 even when the user allowed TF32
    (``torch.set_float32_matmul_precision("high")``): exact search is exact."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def parse_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """``torch.float32|float16|bfloat16`` or one of :data:`DTYPE_NAMES`."""
    resolved = DTYPE_NAMES.get(dtype) if isinstance(dtype, str) else dtype
    if resolved not in STORAGE_DTYPES:
        raise IndexUsageError(f"unsupported dtype {dtype!r}; expected fp32, fp16 or bf16")
    return resolved


def _optional_positive(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise IndexUsageError(f"{name} must be a positive int or None; got {value!r}")
    return value


class ExactIndex(SearchIndex):
    """Exact top-k search with bounded memory (see the module docstring).

    Args:
        dim: vector dimension.
        metric: ``"ip"``, ``"cosine"`` or ``"l2"``.
        dtype: storage dtype, ``torch.float32|float16|bfloat16`` or
            ``"fp32"|"fp16"|"bf16"``.
        device: ``"auto"``, ``"cpu"``, ``"cuda[:n]"`` or a ``torch.device``.
        max_memory: working-memory budget in bytes per search; default is
            half the free CUDA memory on CUDA, 256 MiB on CPU.
        chunk_size: corpus rows per scoring block (default: from the budget).
        query_batch_size: queries per scoring block (default: from the budget).
        rescore_fp32: re-score low-precision candidates in float32.
        rescore_factor: candidates taken per requested result when re-scoring.
    """

    def __init__(
        self,
        dim: int,
        metric: str = "ip",
        dtype: torch.dtype | str = torch.float32,
        device: DeviceLike = "auto",
        max_memory: int | None = None,
        chunk_size: int | None = None,
        query_batch_size: int | None = None,
        rescore_fp32: bool = False,
        rescore_factor: int = 4,
    ) -> None:
        super().__init__(dim, check_metric(metric), resolve_device(device))
        self.dtype = parse_dtype(dtype)
        self.max_memory = _optional_positive("max_memory", max_memory)
        self.chunk_size = _optional_positive("chunk_size", chunk_size)
        self.query_batch_size = _optional_positive("query_batch_size", query_batch_size)
        self.rescore_fp32 = bool(rescore_fp32)
        self.rescore_factor = _optional_positive("rescore_factor", rescore_factor)
        # Blocks appended by add(); concatenated lazily on the next search so
        # repeated adds do not copy the whole corpus each time.
        self._blocks: list[torch.Tensor] = []
        self._sq_norm_blocks: list[torch.Tensor] = []

    # ------------------------------------------------------------- storage
    @property
    def ntotal(self) -> int:
        return sum(block.shape[0] for block in self._blocks)

    def memory_bytes(self) -> int:
        tensors = [*self._blocks, *self._sq_norm_blocks]
        if self._external_ids is not None:
            tensors.append(self._external_ids)
        return sum(t.numel() * t.element_size() for t in tensors)

    def _add_vectors(self, embeddings: torch.Tensor) -> None:
        if self.metric == "cosine":
            stored = F.normalize(embeddings.float(), dim=1).to(self.dtype)
        else:
            # copy=True: the index must not alias (and later see edits to) the caller's tensor.
            stored = embeddings.to(self.dtype, copy=True)
        self._blocks.append(stored)
        if self.metric == "l2":
            self._sq_norm_blocks.append(self._squared_norms(stored))

    @staticmethod
    def _squared_norms(vectors: torch.Tensor) -> torch.Tensor:
        """``|x|^2`` per row in float32, from the stored (rounded) vectors."""
        parts = [
            vectors[start : start + NORM_ROWS].float().square().sum(dim=1)
            for start in range(0, vectors.shape[0], NORM_ROWS)
        ]
        return torch.cat(parts) if parts else vectors.new_zeros(0, dtype=torch.float32)

    def _stored(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The corpus as one tensor (and its squared norms for L2)."""
        if len(self._blocks) > 1:
            self._blocks = [torch.cat(self._blocks)]
        if len(self._sq_norm_blocks) > 1:
            self._sq_norm_blocks = [torch.cat(self._sq_norm_blocks)]
        if not self._blocks:
            empty = torch.empty(0, self.dim, dtype=self.dtype, device=self.device)
            return empty, None
        vectors = self._blocks[0]
        norms = self._sq_norm_blocks[0] if self._sq_norm_blocks else None
        return vectors, norms

    # -------------------------------------------------------------- search
    def search(self, queries: Any, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-``k`` ``(scores, indices)``, float32 / int64 ``(Q, k)`` on ``self.device``.

        ``1 <= k <= ntotal`` is required (IndexUsageError otherwise).
        """
        query_vectors = self.queries_tensor(queries).float()
        k = check_k(k, self.ntotal)
        if self.metric == "cosine":
            query_vectors = F.normalize(query_vectors, dim=1)
        rescoring = self.rescore_fp32 and self.dtype != torch.float32
        n_candidates = min(self.ntotal, k * self.rescore_factor) if rescoring else k
        scores, positions = self._scan(query_vectors, n_candidates)
        if rescoring:
            scores, positions = self._rescore(query_vectors, positions, k)
        return scores, self.positions_to_ids(positions)

    def _scan(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Chunked low-precision scan: corpus chunks outer (each upcast at
        most once), query batches inner, running top-k merged on device."""
        compute_dtype = matmul_dtype(self.device, self.dtype, self.metric)
        rounded_queries = queries.to(self.dtype).to(compute_dtype)
        query_sq_norms = rounded_queries.float().square().sum(dim=1)
        plan = self._plan(queries.shape[0], k, compute_dtype)
        best_scores, best_positions = empty_topk(queries.shape[0], k, self.device)
        with self._corpus_blocks(plan.corpus_chunk, compute_dtype) as blocks:
            for doc_start, chunk, sq_norms in blocks:
                for q_start in range(0, queries.shape[0], plan.query_batch):
                    rows = slice(q_start, q_start + plan.query_batch)
                    with ieee_fp32_matmul():
                        block = torch.matmul(rounded_queries[rows], chunk.T)
                    if sq_norms is not None:
                        block.mul_(2).sub_(sq_norms).sub_(query_sq_norms[rows, None])
                        block.clamp_(max=0.0)
                    # Selected in the matmul's dtype: the k values upcast are the
                    # fp32 block's, without a (B, n) fp32 copy.
                    values, positions = block_topk(block, k)
                    if doc_start == 0 and values.shape[1] == k:
                        # The first chunk's top k is the running best so far: ordered, not merged with the empty buffers.
                        best_scores[rows], best_positions[rows] = sort_by_score_then_index(values.float(), positions)
                        continue
                    best_scores[rows], best_positions[rows] = merge_topk(
                        best_scores[rows], best_positions[rows], values.float(), positions + doc_start
                    )
        return best_scores, best_positions

    def _plan(self, n_queries: int, k: int, compute_dtype: torch.dtype) -> BlockPlan:
        """Block sizes within the budget: upcast corpus rows plus the score block (``k``: for subclasses)."""
        upcast_row_bytes = 0 if compute_dtype == self.dtype else self.dim * 4
        return plan_blocks(
            n_queries=n_queries,
            n_docs=self.ntotal,
            bytes_per_score=BYTES_PER_SCORE,
            bytes_per_doc_row=upcast_row_bytes,
            budget=memory_budget(self.device, self.max_memory),
            chunk_size=self.chunk_size,
            query_batch=self.query_batch_size,
        )

    @contextmanager
    def _corpus_blocks(
        self, rows_per_block: int, compute_dtype: torch.dtype
    ) -> Iterator[Iterable[tuple[int, torch.Tensor, torch.Tensor | None]]]:
        """``(start, rows, squared norms)`` per block of ``rows_per_block`` corpus rows, in order
        (a context: a subclass may hold copies in flight that an error must drain)."""
        yield (
            (start, *self._chunk(start, start + rows_per_block, compute_dtype))
            for start in range(0, self.ntotal, rows_per_block)
        )

    def _chunk(self, start: int, stop: int, compute_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Rows ``[start, stop)`` in ``compute_dtype`` on the device (and their L2 squared norms)."""
        vectors, sq_norms = self._stored()
        return vectors[start:stop].to(compute_dtype), None if sq_norms is None else sq_norms[start:stop]

    def _rescore(
        self, queries: torch.Tensor, candidates: torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact float32 scores for ``candidates`` (Q, k'), then the top ``k``."""
        vectors, _ = self._stored()
        # Gathered fp32 candidates plus one same-sized temporary per query.
        bytes_per_query = candidates.shape[1] * self.dim * 4 * 2
        batch = max(1, memory_budget(self.device, self.max_memory) // bytes_per_query)
        out_scores, out_positions = [], []
        for q_start in range(0, queries.shape[0], batch):
            rows = slice(q_start, q_start + batch)
            docs = vectors[candidates[rows]].float()  # (B, k', d)
            if self.metric == "l2":
                # Direct difference: more accurate than the norm expansion.
                scores = -(docs - queries[rows, None, :]).square().sum(dim=2)
            else:
                with ieee_fp32_matmul():
                    scores = torch.bmm(docs, queries[rows, :, None]).squeeze(2)
            scores, positions = sort_by_score_then_index(scores, candidates[rows])
            out_scores.append(scores[:, :k])
            out_positions.append(positions[:, :k])
        return torch.cat(out_scores), torch.cat(out_positions)

    # ------------------------------------------------------- serialisation
    def _state(self) -> dict[str, Any]:
        vectors, sq_norms = self._stored()
        return {
            "dtype": str(self.dtype).removeprefix("torch."),
            "max_memory": self.max_memory,
            "chunk_size": self.chunk_size,
            "query_batch_size": self.query_batch_size,
            "rescore_fp32": self.rescore_fp32,
            "rescore_factor": self.rescore_factor,
            "vectors": vectors.cpu(),
            "sq_norms": None if sq_norms is None else sq_norms.cpu(),
        }

    @classmethod
    def _from_state(cls, state: dict[str, Any], device: DeviceLike) -> "ExactIndex":
        """Rebuild after checking that the stored data agree with the settings.

        Vectors must be ``(n, dim)`` in the stored dtype and finite, cosine
        vectors unit length (or zero), and L2 norms present and equal to the
        vectors' own: a file that fails any of these would search wrongly.
        """
        if not isinstance(state.get("rescore_fp32"), bool):
            raise IndexFileError(f"rescore_fp32 is {state.get('rescore_fp32')!r}, not a bool")
        dtype = parse_dtype(state.get("dtype"))
        vectors = state_tensor(state, "vectors", (-1, state["dim"]), (dtype,))
        check_finite(vectors, "vectors", IndexFileError)
        if state["metric"] == "cosine" and vectors.shape[0]:
            norms = vectors.float().norm(dim=1)
            off = ((norms - 1).abs() > UNIT_NORM_TOLERANCE[dtype]) & (norms != 0)
            if bool(off.any()):
                row = int(torch.nonzero(off)[0])
                raise IndexFileError(f"cosine vector row {row} has norm {float(norms[row]):.6g}, not 1")
        wants_norms = state["metric"] == "l2" and vectors.shape[0] > 0
        if not wants_norms and state.get("sq_norms") is not None:
            raise IndexFileError(f"sq_norms stored for a {state['metric']} index of {vectors.shape[0]} vectors")
        if wants_norms:
            sq_norms = state_tensor(state, "sq_norms", (vectors.shape[0],), (torch.float32,))
            # Same function and inputs as at add time; only summation order
            # (CPU vs CUDA) can differ, by a few ulps.
            if not torch.allclose(sq_norms, cls._squared_norms(vectors), rtol=1e-4, atol=0.0):
                raise IndexFileError("sq_norms do not match the stored vectors")
        index = cls(
            state["dim"],
            metric=state["metric"],
            dtype=state["dtype"],
            device=device,
            max_memory=state["max_memory"],
            chunk_size=state["chunk_size"],
            query_batch_size=state["query_batch_size"],
            rescore_fp32=state["rescore_fp32"],
            rescore_factor=state["rescore_factor"],
        )
        if state["vectors"].shape[0]:
            index._blocks = [state["vectors"].to(index.device)]
            if state["sq_norms"] is not None:
                index._sq_norm_blocks = [state["sq_norms"].to(index.device)]
        return index
