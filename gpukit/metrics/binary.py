"""Measures over binary relevance: P, R, Success, hits, F, RR, AP, R-precision, bpref.

Inputs are ranked relevance masks ``rel`` of shape (Q, K) (True where the
document at that rank has grade >= the relevance level; padding is False) and
per-query counts. Every function takes a list of cutoffs and answers all of
them at once, returning float64 (Q, C). Counts (P, R, Success, Rprec) are row
sums of the relevance mask, exact in any order; AP's float sum is added left
to right on every device (see ``ordered_prefix_at``), from the relevant
positions alone on CPU. A caller may pass ``hits = running_hits(rel)`` to
read counts off a running sum it already has.
Where a denominator is zero the value is 0 (trec_eval); whether such queries
enter a mean is the evaluation layer's convention, not the kernel's.
"""
from __future__ import annotations

import torch

from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at, ordered_prefix_at_, prefix_at, safe_divide, truncate


def running_hits(rel: torch.Tensor) -> torch.Tensor:
    """(Q, K) int32: relevant documents at ranks 1..i (exact, a quarter of float64's bytes).

    Widened once and then summed in place: ``cumsum(dtype=...)`` of a bool
    tensor takes about twice as long on CPU for the same integers."""
    return rel.to(torch.int32).cumsum_(1)


def _hits_at(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None) -> torch.Tensor:
    """Relevant documents in the top k, (Q, C) float64.

    Without a shared running sum, each cutoff is a row sum of the first k
    columns: integer counts are exact in any order, and a vectorised row sum
    is several times cheaper than a running sum over every column.
    """
    if hits is not None:
        return prefix_at(hits, cutoffs).to(torch.float64)
    q, width = rel.shape
    cols = [rel[:, : (width if k is None else min(int(k), width))].sum(1) for k in cutoffs]
    if len(cols) == 1:  # a view, not a stacked copy, before the widening copy
        return cols[0][:, None].to(torch.float64)
    return torch.stack(cols, dim=1).to(torch.float64) if cols else rel.new_zeros((q, 0), dtype=torch.float64)


def _k(rel: torch.Tensor, cutoffs: Cutoffs, low: int | None = None, high: int | None = None) -> torch.Tensor:
    """(1, C) float64 row of the cutoffs (``None``: the ranking width),
    clamped to [low, high] here in Python, broadcast against (Q, C) values:
    one fill per distinct value instead of a (Q, C) table and a clamp."""
    width = rel.shape[1]
    ks = [width if k is None else k for k in cutoffs]
    ks = [k if low is None else max(k, low) for k in ks]
    ks = [k if high is None else min(k, high) for k in ks]
    if len(set(ks)) <= 1:
        return rel.new_full((1, len(ks)), float(ks[0]) if ks else 0.0, dtype=torch.float64)
    return torch.cat([rel.new_full((1, 1), float(k), dtype=torch.float64) for k in ks], dim=1)


def precision(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """P@k = |relevant in top k| / k (k, not the number retrieved, as trec_eval)."""
    return _hits_at(rel, cutoffs, hits) / _k(rel, cutoffs, low=1)


def recall(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """R@k = |relevant in top k| / R, R = relevant judged docs for the query."""
    return safe_divide(_hits_at(rel, cutoffs, hits), num_rel[:, None])


def success(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """Success@k = 1 if any relevant document is in the top k, else 0."""
    return (_hits_at(rel, cutoffs, hits) > 0).to(torch.float64)


def hits(rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None) -> torch.Tensor:
    """Hits@k = |relevant in top k| (ranx's hits; ``None``: the whole ranking)."""
    return _hits_at(rel, cutoffs, hits)


def f_measure(rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs, beta: float,
              hits: torch.Tensor | None = None) -> torch.Tensor:
    """F@k = (beta + 1) * P@k * R@k / (beta * P@k + R@k); 0 when nothing relevant is in the top k.

    P@k divides by k (not by the number retrieved, as :func:`precision`);
    ``beta`` weighs recall (trec_eval's set_F x, van Rijsbergen's beta
    squared): beta = 1 is ranx's f1@k, the harmonic mean of P@k and R@k.
    """
    found = _hits_at(rel, cutoffs, hits)
    p = found / _k(rel, cutoffs, low=1)
    r = safe_divide(found, num_rel[:, None])
    x = float(beta)
    value = (x + 1.0) * p * r / (x * p + r).clamp(min=1e-300)  # the clamp: 0/0 where found = 0, masked below
    return torch.where(found > 0, value, torch.zeros_like(value))


def _first_relevant(rel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """((Q, 1) int64 column of each row's first relevant document, (Q, 1) bool:
    the row has one) of a (Q, K) relevance mask with K >= 1.

    argmax finds the first maximum; a row without a relevant document has its
    maximum (False) at column 0, told apart by reading that entry."""
    first = torch.argmax(rel.view(torch.uint8), dim=1, keepdim=True)
    return first, rel.gather(1, first)


def first_relevant_rank(rel: torch.Tensor) -> torch.Tensor:
    """1-based rank of the first relevant document; K + 1 when there is none."""
    q, width = rel.shape
    if width == 0:
        return torch.ones(q, dtype=torch.int64, device=rel.device)
    first, found = _first_relevant(rel)
    first = first[:, 0] + 1
    return torch.where(found[:, 0], first, torch.full_like(first, width + 1))


def reciprocal_rank(rel: torch.Tensor, cutoffs: Cutoffs) -> torch.Tensor:
    """RR@k = 1 / rank of the first relevant document if it is within k, else 0."""
    rel = truncate(rel, cutoffs)
    q, width = rel.shape
    if width == 0:
        return torch.zeros((q, len(cutoffs)), dtype=torch.float64, device=rel.device)
    first, hit = _first_relevant(rel)  # hit: a relevant document in the (truncated) ranking
    rank = (first + 1).to(torch.float64)
    if any(k is not None and int(k) < width for k in cutoffs):  # a cutoff stops short of it
        hit = hit & (rank <= _k(rel, cutoffs))
    elif len(cutoffs) > 1:
        hit = hit.expand(q, len(cutoffs))
    return torch.where(hit, rank.reciprocal(), 0.0)


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
    # times slower on CPU; the one (Q, K) float64 table is also the running sum's.
    precision_at_rel = hits.to(torch.float64).div_(ranks).masked_fill_(~rel, 0.0)
    sums = ordered_prefix_at_(precision_at_rel, cutoffs)
    return safe_divide(sums, num_rel[:, None])



def r_precision(rel: torch.Tensor, num_rel: torch.Tensor, hits: torch.Tensor | None = None) -> torch.Tensor:
    """Rprec = |relevant in top R| / R, (Q, 1)."""
    q, width = rel.shape
    if width == 0:
        return torch.zeros((q, 1), dtype=torch.float64, device=rel.device)
    if hits is not None:
        col = (num_rel.clamp(min=1, max=width) - 1).to(torch.int64)
        found = hits.gather(1, col[:, None]).to(torch.float64)
    else:
        top_r = torch.arange(width, device=rel.device)[None, :] < num_rel[:, None]
        found = (rel & top_r).sum(1)[:, None].to(torch.float64)
    return safe_divide(found, num_rel[:, None])


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


def pair_accuracy(rel: torch.Tensor, nonrel: torch.Tensor, cutoffs: Cutoffs) -> tuple[torch.Tensor, torch.Tensor]:
    """Accuracy@k: the fraction of (relevant, non-relevant) pairs in the top k
    that the ranking orders relevant first (ir_measures' Accuracy).

        Accuracy@k = 1 - sum over relevant r in the top k of n_r / (N_k * R_k)

    with n_r the non-relevant documents ranked above r, N_k the non-relevant
    and R_k the relevant documents in the top k. ``rel`` and ``nonrel`` are
    (Q, K) masks of retrieved documents (padding False in both). Integer
    counts, one division: the value ir_measures' Python gives, bit for bit.
    Returns ((Q, C) float64 values, 0 where undefined; (Q, C) bool, defined:
    the top k holds a relevant and a non-relevant document).
    """
    rel, nonrel = truncate(rel, cutoffs), truncate(nonrel, cutoffs)
    nonrel_above = nonrel.cumsum(1)  # at a relevant rank, the non-relevant ranks above it
    crossed = prefix_at((nonrel_above * rel).cumsum(1), cutoffs)
    num_rel, num_nonrel = prefix_at(rel.cumsum(1), cutoffs), prefix_at(nonrel_above, cutoffs)
    pairs = num_rel * num_nonrel
    defined = pairs > 0
    return torch.where(defined, 1.0 - crossed.to(torch.float64) / pairs.clamp(min=1).to(torch.float64), 0.0), defined
