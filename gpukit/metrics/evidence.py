"""Completeness of evidence: Complete@k, capped recall, Hole@k, capped AP.

These are the measures of embedding-retrieval benchmarks (BEIR, MTEB,
sentence-transformers) and of multi-hop question answering, where a query is
answered only when *all* of its supporting documents are retrieved.

Inputs are ranked relevance masks ``rel`` (Q, K) (True where the document at
that rank is judged with grade >= the relevance level; padding is False) and
per-query counts R of relevant judged documents, retrieved or not. Every
function answers a list of cutoffs at once and returns float64 (Q, C).
Where a denominator is zero the value is 0 (trec_eval's rule); whether such a
query enters a mean is the evaluation layer's convention.
"""
from __future__ import annotations

import torch

from gpukit.metrics.binary import average_precision, running_hits
from gpukit.metrics.cutoffs import Cutoffs, cutoff_values, prefix_at, safe_divide, truncate


def _k(width: int, rows: int, cutoffs: Cutoffs, device: torch.device) -> torch.Tensor:
    """(Q, C) float64 cutoffs; ``None`` (the whole ranking) is the padded width."""
    return cutoff_values(cutoffs, torch.full((rows,), width, device=device))


def _hits(rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """(Q, C) float64 relevant documents in the top k (integer counts: exact)."""
    return prefix_at(running_hits(truncate(rel, cutoffs)), cutoffs).to(torch.float64)


def complete(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Complete@k = 1 if every relevant judged document is in the top k, else 0.

    "The retrieved set supports the complete answer": |relevant in top k| = R
    with R > 0. A query without relevant documents (R = 0) scores 0, the
    zero-denominator rule (Complete@k is floor(R@k)).
    """
    hits = _hits(rel, cutoffs)
    r = num_rel.to(torch.float64)[:, None]
    return ((hits == r) & (r > 0)).to(torch.float64)


def capped_recall(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """R_cap@k = |relevant in top k| / min(k, R) (BEIR's ``recall_cap``); 0 when R = 0.

    Unlike R@k it reaches 1 when the top k is all relevant even if R > k.
    """
    hits = _hits(rel, cutoffs)
    cap = torch.minimum(_k(rel.shape[1], rel.shape[0], cutoffs, rel.device), num_rel.to(torch.float64)[:, None])
    return safe_divide(hits, cap)


def capped_average_precision(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """APCap@k = (1 / min(k, R)) * sum over relevant ranks i <= k of P@i; 0 when R = 0.

    sentence-transformers' InformationRetrievalEvaluator MAP@k. trec_eval's
    map_cut divides the same sum by R instead. The sum is
    :func:`~gpukit.metrics.binary.average_precision` with R = 1 (a division
    by one is exact), so both share one fixed-order sum.
    """
    ones = torch.ones_like(num_rel)
    sums = average_precision(rel, ones, cutoffs)
    cap = torch.minimum(_k(rel.shape[1], rel.shape[0], cutoffs, rel.device), num_rel.to(torch.float64)[:, None])
    return safe_divide(sums, cap)


def hole(unannotated: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """Hole@k = |retrieved documents in the top k that are not annotated| / k.

    ``unannotated`` (Q, K) is True where a *retrieved* document has no
    judgment for any query (padding is False). The denominator is k even when
    fewer than k documents are retrieved, as BEIR and MTEB divide by k.
    """
    unannotated = truncate(unannotated, cutoffs)
    q, width = unannotated.shape
    counts = prefix_at(unannotated.cumsum(1, dtype=torch.int32), cutoffs).to(torch.float64)
    return counts / _k(width, q, cutoffs, unannotated.device).clamp(min=1)
