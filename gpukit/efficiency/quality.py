"""The quality point at which every cost is measured.

* ``recall@k`` against exact search (Big-ANN's definition):
  ``mean_q |approx_top_k(q) ∩ exact_top_k(q)| / k``, the ground truth
  coming from a float32 :class:`~gpukit.index.ExactIndex` with the same
  metric on the same device;
* ``nDCG@10`` of the searched ranking when judgments are given
  (``gpukit.evaluate``, default ``gpukit`` convention), the ranking being
  the top ``k`` results.

A cost without its quality point says nothing (a faster index may simply
be worse), so every axis of the report repeats this point.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import torch

from gpukit.io.corpus_keys import CorpusKeys
from gpukit.judgments.qrels import Qrels
from gpukit.data.run import Run
from gpukit.errors import UsageError
from gpukit.evaluation import evaluate
from gpukit.index import ExactIndex, recall_at_k

NDCG = "nDCG@10"


@dataclass(frozen=True)
class QualityPoint:
    k: int
    recall_at_k: float
    ndcg_at_10: float | None
    ndcg_reason: str | None
    search_params: dict[str, Any]
    ground_truth: str

    def short(self) -> dict[str, Any]:
        """The compact form repeated inside every axis."""
        return {f"recall@{self.k}": self.recall_at_k, NDCG: self.ndcg_at_10, "search_params": self.search_params}

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            f"recall@{self.k}": self.recall_at_k,
            NDCG: self.ndcg_at_10,
            "ndcg_reason": self.ndcg_reason,
            "search_params": self.search_params,
            "ground_truth": self.ground_truth,
        }


def exact_ground_truth(corpus: torch.Tensor, queries: torch.Tensor, k: int, metric: str) -> torch.Tensor:
    """Exact top-``k`` indices from a float32 ExactIndex on the corpus's device."""
    index = ExactIndex(corpus.shape[1], metric=metric, dtype=torch.float32, device=corpus.device)
    index.add(corpus)
    return index.search(queries, k)[1]


def quality_point(
    scores: torch.Tensor,
    indices: torch.Tensor,
    exact_indices: torch.Tensor,
    k: int,
    metric: str,
    search_params: dict[str, Any],
    qrels: Qrels | None = None,
    query_ids: Sequence[str] | None = None,
    doc_ids: Sequence[str] | pa.Array | CorpusKeys | None = None,
) -> QualityPoint:
    """Recall@k of ``indices`` and, with ``qrels`` and ids, nDCG@10 of the ranking."""
    recall = recall_at_k(indices, exact_indices, k)
    ndcg, reason = None, "no judgments given (--qrels, or --synthetic)"
    if qrels is not None:
        if query_ids is None or doc_ids is None:
            raise UsageError("nDCG@10 needs query_ids and doc_ids next to qrels")
        # doc_ids as given: a CorpusKeys (or a pa.Array, cached while it lives) keeps its key table across calls.
        run = Run.from_topk(scores, indices, list(query_ids), doc_ids, name="bench")
        ndcg = evaluate(qrels, run, [NDCG])[NDCG].mean
        reason = None if k >= 10 else f"ranking depth k={k} < 10: nDCG@10 of the top {k} only"
    return QualityPoint(
        k=k,
        recall_at_k=recall,
        ndcg_at_10=ndcg,
        ndcg_reason=reason,
        search_params=dict(search_params),
        ground_truth=f"ExactIndex(metric={metric!r}, dtype=float32) top-{k} on the same device",
    )
