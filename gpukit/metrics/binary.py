"""Measures over binary relevance: P, R, Success, RR, AP, R-precision, bpref.

Inputs are ranked relevance masks ``rel`` of shape (Q, K) (True where the
document at that rank has grade >= the relevance level; padding is False) and
per-query counts. Every function takes a list of cutoffs and answers all of
them from one cumulative sum, returning float64 (Q, C). A caller evaluating
several measures may pass ``hits = running_hits(rel)`` to share that sum.
Where a denominator is zero the value is 0 (trec_eval); whether such queries
enter a mean is the evaluation layer's convention, not the kernel's.
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import Cutoffs, cutoff_values, ordered_prefix_at, prefix_at, safe_divide, truncate


def running_hits(rel: torch.Tensor) -> torch.Tensor:
    """(Q, K) int32: relevant documents at ranks 1..i (exact, a quarter of float64's bytes)."""
    return rel.cumsum(1, dtype=torch.int32)


def _hits_at(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None) -> torch.Tensor:
    """Relevant documents in the top k, (Q, C) float64."""
    if hits is None:
        hits = running_hits(truncate(rel, cutoffs))
    return prefix_at(hits, cutoffs).to(torch.float64)


def _k(rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    return cutoff_values(cutoffs, torch.full((rel.shape[0],), rel.shape[1], device=rel.device))


def precision(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """P@k = |relevant in top k| / k (k, not the number retrieved, as trec_eval)."""
    return _hits_at(rel, cutoffs, hits) / _k(rel, cutoffs).clamp(min=1)


def recall(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """R@k = |relevant in top k| / R, R = relevant judged docs for the query."""
    return safe_divide(_hits_at(rel, cutoffs, hits), num_rel[:, None])


def success(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """Success@k = 1 if any relevant document is in the top k, else 0."""
    return (_hits_at(rel, cutoffs, hits) > 0).to(torch.float64)


def first_relevant_rank(rel: torch.Tensor) -> torch.Tensor:
    """1-based rank of the first relevant document; K + 1 when there is none."""
    q, width = rel.shape
    if width == 0:
        return torch.ones(q, dtype=torch.int64, device=rel.device)
    first = torch.argmax(rel.to(torch.uint8), dim=1) + 1
    return torch.where(rel.any(1), first, torch.full_like(first, width + 1))


def reciprocal_rank(rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """RR@k = 1 / rank of the first relevant document if it is within k, else 0."""
    rel = truncate(rel, cutoffs)
    first = first_relevant_rank(rel).to(torch.float64)[:, None]
    # first_relevant_rank answers K + 1 for "none": test hits explicitly so a
    # cutoff beyond the longest ranking cannot count that sentinel.
    hit = rel.any(1)[:, None] & (first <= _k(rel, cutoffs))
    return torch.where(hit, 1.0 / first, torch.zeros_like(first))


def average_precision(
    rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None
) -> torch.Tensor:
    """AP@k = (1/R) * sum over relevant ranks i <= k of P@i.

    The denominator is R, all relevant judged documents, whether retrieved or
    not and whatever k is (trec_eval's map and map_cut).
    """
    rel = truncate(rel, cutoffs)
    hits = running_hits(rel) if hits is None else hits[:, : rel.shape[1]]
    ranks = torch.arange(1, rel.shape[1] + 1, device=rel.device, dtype=torch.float64)
    # Same-dtype in-place steps: mixed int/float/bool arithmetic is several
    # times slower on CPU.
    precision_at_rel = hits.to(torch.float64).div_(ranks).masked_fill_(~rel, 0.0)
    return safe_divide(ordered_prefix_at(precision_at_rel, cutoffs), num_rel[:, None])


def r_precision(rel: torch.Tensor, num_rel: torch.Tensor, hits: torch.Tensor | None = None) -> torch.Tensor:
    """Rprec = |relevant in top R| / R, (Q, 1)."""
    q, width = rel.shape
    if width == 0:
        return torch.zeros((q, 1), dtype=torch.float64, device=rel.device)
    hits = running_hits(rel) if hits is None else hits
    col = (num_rel.clamp(min=1, max=width) - 1).to(torch.int64)
    return safe_divide(hits.gather(1, col[:, None]).to(torch.float64), num_rel[:, None])


def bpref(rel: torch.Tensor, judged_nonrel: torch.Tensor, num_rel: torch.Tensor, num_nonrel: torch.Tensor) -> torch.Tensor:
    """bpref (Buckley & Voorhees 2004, as trec_eval computes it), (Q, 1).

    bpref = (1/R) * sum over retrieved relevant r of
    (1 - min(n_r, R) / min(N, R)), where n_r counts judged non-relevant
    documents ranked above r and N is the number of judged non-relevant
    documents. The term is 1 when n_r = 0. Unjudged documents are skipped.
    """
    nonrel_above = judged_nonrel.cumsum(1, dtype=torch.int32).to(torch.float64)
    r = num_rel.to(torch.float64)[:, None]
    cap = torch.minimum(num_nonrel.to(torch.float64)[:, None], r)
    penalty = safe_divide(torch.minimum(nonrel_above, r), cap.expand_as(nonrel_above))
    terms = torch.where(rel & (nonrel_above > 0), 1.0 - penalty, rel.to(torch.float64))
    return safe_divide(ordered_prefix_at(terms, [None]), num_rel[:, None])
