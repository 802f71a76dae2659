"""Exact and FAISS search behind one interface, plus ANN quality measures.

``index.add(embeddings, ids=None)``, ``index.search(queries, k) -> (scores,
indices)`` (float32 / int64 tensors on ``index.device``, larger score is
better, ties by smaller index), ``index.memory_bytes()``, ``index.save(path)``
and ``SearchIndex.load(path)``. See docs/retrieval.md.
"""
from gpukit.index.base import IndexUsageError, SearchIndex
from gpukit.index.exact import ExactIndex
from gpukit.index.faiss_index import FaissIndex, faiss_has_gpu
from gpukit.index.quality import ndcg_at_k_loss, recall_at_k
from gpukit.index.streamed import HostStreamedIndex, write_vectors

__all__ = [
    "ExactIndex",
    "FaissIndex",
    "HostStreamedIndex",
    "IndexUsageError",
    "SearchIndex",
    "faiss_has_gpu",
    "ndcg_at_k_loss",
    "recall_at_k",
    "write_vectors",
]
