"""trec_eval's further binary measures: interpolated precision, infAP,
relative precision, precision at multiples of R and the set measures.

Inputs are ranked relevance masks of shape (Q, K) (True where the document at
that rank is judged with grade >= the relevance level; padding is False) and
per-query counts, (Q,) integer tensors. Every function answers all of its
cutoffs (or levels) at once and returns float64 (Q, C). Where a denominator is
zero the value is 0 (trec_eval); whether such queries enter a mean is the
evaluation layer's convention. Arithmetic follows trec_eval's C expressions
operation by operation, so values are trec_eval's to the last bit.
"""
from __future__ import annotations

from typing import Sequence

import torch

from gpukit.metrics.binary import running_hits
from gpukit.metrics.cutoffs import Cutoffs, ordered_prefix_at, prefix_at, safe_divide

#: trec_eval's INFAP_EPSILON (trec_eval.h): keeps infAP's precision estimate finite.
INFAP_EPSILON = 1e-5


def _lround(x: torch.Tensor) -> torch.Tensor:
    """C's lround for x >= 0: nearest integer, halves away from zero (torch.round is half-to-even)."""
    whole = torch.floor(x)
    return (whole + (x - whole >= 0.5).to(x.dtype)).to(torch.int64)


def interpolated_precision(
    rel: torch.Tensor, num_rel: torch.Tensor, levels: Sequence[float], hits: torch.Tensor | None = None
) -> torch.Tensor:
    """IPrec at each recall level, (Q, L), as trec_eval's iprec_at_recall.

    With R relevant documents, level r asks for c = lround(r * R) of them;
    the value is max over ranks j >= rank of the c-th relevant document of
    P@j (j up to the ranking's length; rank 1 for c = 0), and 0 when the
    ranking holds fewer than c relevant documents or is empty.
    """
    q, width = rel.shape
    out = torch.zeros((q, len(levels)), dtype=torch.float64, device=rel.device)
    if width == 0 or not levels:
        return out
    if hits is None:
        hits = running_hits(rel)
    ranks = torch.arange(1, width + 1, device=rel.device, dtype=torch.float64)
    precision = hits.to(torch.float64) / ranks
    # Max over every later rank (suffix maximum); padding past the ranking's
    # end only repeats the final hit count over larger ranks, so it never
    # exceeds P at the last retrieved rank and needs no mask.
    best_after = torch.flip(torch.cummax(torch.flip(precision, (1,)), dim=1).values, (1,))
    found = hits[:, -1].to(torch.int64)
    r = num_rel.to(torch.float64)
    for column, level in enumerate(levels):
        wanted = _lround(float(level) * r)
        # searchsorted finds the first rank whose running count reaches c:
        # the rank of the c-th relevant document (rank 1 for c = 0).
        start = torch.searchsorted(hits, wanted.to(hits.dtype)[:, None].contiguous()).clamp_(max=width - 1)
        value = best_after.gather(1, start)[:, 0]
        out[:, column] = torch.where(wanted <= found, value, torch.zeros_like(value))
    return out


def interpolated_precision_average(
    rel: torch.Tensor, num_rel: torch.Tensor, levels: Sequence[float], hits: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean of IPrec over ``levels`` (ascending), (Q, 1), as trec_eval's 11pt_avg.

    trec_eval adds the levels from the highest down; the same order here.
    """
    values = interpolated_precision(rel, num_rel, levels, hits)
    total = ordered_prefix_at(torch.flip(values, (1,)), [None])
    return total / float(len(levels))


def relative_precision(
    rel: torch.Tensor, num_rel: torch.Tensor, cutoffs: Cutoffs, hits: torch.Tensor | None = None
) -> torch.Tensor:
    """relative_P@k = |relevant in the top k| / min(k, R); 0 when R = 0."""
    q, width = rel.shape
    if width == 0:
        return torch.zeros((q, len(cutoffs)), dtype=torch.float64, device=rel.device)
    if hits is None:
        hits = running_hits(rel)
    found = prefix_at(hits, cutoffs).to(torch.float64)
    k = torch.tensor([float(c) for c in cutoffs], dtype=torch.float64, device=rel.device)
    return safe_divide(found, torch.minimum(k[None, :], num_rel.to(torch.float64)[:, None]))


def precision_at_r_multiple(
    rel: torch.Tensor, num_rel: torch.Tensor, mult: float, hits: torch.Tensor | None = None
) -> torch.Tensor:
    """Rprec_mult = P@n with n = (long)(mult * R + 0.9) (trec_eval's rounding), (Q, 1).

    P@n counts n, not the number retrieved; 0 when n = 0.
    """
    q, width = rel.shape
    n = torch.floor(float(mult) * num_rel.to(torch.float64) + 0.9).to(torch.int64)
    if width == 0:
        return torch.zeros((q, 1), dtype=torch.float64, device=rel.device)
    if hits is None:
        hits = running_hits(rel)
    column = (n.clamp(min=1, max=width) - 1)[:, None]
    found = hits.gather(1, column).to(torch.float64)
    return safe_divide(found, n[:, None])


def inferred_ap(
    rel: torch.Tensor, judged_nonrel: torch.Tensor, pool_unjudged: torch.Tensor, num_rel: torch.Tensor
) -> torch.Tensor:
    """infAP (Yilmaz & Aslam 2006, as trec_eval's m_infap.c), (Q, 1).

    Documents not in the pool (absent from the qrels) are skipped but keep
    their ranks; pooled-but-unjudged documents (negative qrels grades) count
    as pooled. A relevant document at rank 1 adds 1; at rank j + 1 > 1 it adds
    1/(j+1) + (j/(j+1)) * ((r + n + u)/j) * ((r + eps)/(r + n + 2 eps)), with
    r, n, u the relevant, judged non-relevant and pooled-unjudged documents
    above it and eps = 1e-5. The sum (rank order) is divided by R.
    """
    q, width = rel.shape
    if width == 0:
        return torch.zeros((q, 1), dtype=torch.float64, device=rel.device)
    # Counts strictly above each rank: running sums shifted right by one.
    def above(mask: torch.Tensor) -> torch.Tensor:
        inclusive = mask.cumsum(1, dtype=torch.int64)
        return inclusive - mask.to(torch.int64)

    r, n, u = above(rel), above(judged_nonrel), above(pool_unjudged)
    fj = torch.arange(width, device=rel.device, dtype=torch.float64).expand(q, width)
    # Operation order of trec_eval's expression (left-associative products).
    estimate = (fj / (fj + 1.0)) * ((r + n + u).to(torch.float64) / fj)
    estimate = estimate * ((r.to(torch.float64) + INFAP_EPSILON) / ((r + n).to(torch.float64) + 2 * INFAP_EPSILON))
    terms = 1.0 / (fj + 1.0) + estimate
    terms[:, 0] = 1.0  # rank 1 (the 0/0 above is replaced here)
    terms = torch.where(rel, terms, torch.zeros_like(terms))
    return safe_divide(ordered_prefix_at(terms, [None]), num_rel[:, None])


def set_precision(num_rel_ret: torch.Tensor, num_ret: torch.Tensor) -> torch.Tensor:
    """set_P = |relevant retrieved| / |retrieved|, (Q, 1); 0 for an empty ranking."""
    return safe_divide(num_rel_ret.to(torch.float64), num_ret)[:, None]


def set_relative_precision(num_rel_ret: torch.Tensor, num_ret: torch.Tensor, num_rel: torch.Tensor) -> torch.Tensor:
    """set_relative_P = |relevant retrieved| / min(|retrieved|, R), (Q, 1)."""
    return safe_divide(num_rel_ret.to(torch.float64), torch.minimum(num_ret, num_rel))[:, None]


def set_average_precision(num_rel_ret: torch.Tensor, num_ret: torch.Tensor, num_rel: torch.Tensor) -> torch.Tensor:
    """set_map = |relevant retrieved|^2 / (|retrieved| * R), (Q, 1)."""
    found = num_rel_ret.to(torch.float64)
    return safe_divide(found * found, num_ret.to(torch.float64) * num_rel.to(torch.float64))[:, None]


def set_f(num_rel_ret: torch.Tensor, num_ret: torch.Tensor, num_rel: torch.Tensor, beta: float) -> torch.Tensor:
    """set_F = (beta + 1) * P * R / (beta * P + R) over the retrieved set, (Q, 1).

    ``beta`` is trec_eval's x, the weight of recall relative to precision
    (van Rijsbergen's beta squared); 0 when nothing relevant is retrieved.
    """
    found = num_rel_ret.to(torch.float64)
    p = safe_divide(found, num_ret)
    r = safe_divide(found, num_rel)
    x = float(beta)
    value = (x + 1.0) * p * r / (x * p + r).clamp(min=1e-300)
    return torch.where(num_rel_ret > 0, value, torch.zeros_like(value))[:, None]


def utility(num_rel_ret: torch.Tensor, num_ret: torch.Tensor, num_rel: torch.Tensor,
            weights: Sequence[float], num_docs: int) -> torch.Tensor:
    """utility = w1 * a + w2 * b + w3 * c + w4 * d, (Q, 1).

    a = relevant retrieved, b = retrieved not relevant, c = relevant not
    retrieved, d = num_docs + a - |retrieved| - R (the rest of a collection
    of num_docs documents; trec_eval -N, default 0).
    """
    a = num_rel_ret.to(torch.int64)
    ret, big_r = num_ret.to(torch.int64), num_rel.to(torch.int64)
    w1, w2, w3, w4 = (float(w) for w in weights)
    value = w1 * a.to(torch.float64) + w2 * (ret - a).to(torch.float64)
    value = value + w3 * (big_r - a).to(torch.float64)
    value = value + w4 * (int(num_docs) + a - ret - big_r).to(torch.float64)
    return value[:, None]
