"""Per-query values of torchmetrics 1.9's retrieval metrics, batched over queries.

Each function takes a :class:`~gpukit.compat.torchmetrics_state.Ranked`
(every query's candidates in canonical order: pred descending, ties with the
less relevant first) and returns (G,) float64, one value per query, with
torchmetrics' definitions (``torchmetrics/functional/retrieval``):

* "hit" = target 1 *and* pred > 0 for MAP, MRR, Precision and Recall
  (torchmetrics zeroes the target of a candidate scoring <= 0); target 1
  alone for HitRate, RPrecision, FallOut, AUROC and the curves.
* the cut ``k`` is ``top_k``, or the query's candidate count n when None;
  rank i is 1-based.

Every query passed has a non-empty target (the caller applies
``empty_target_action`` first). Pure tensor functions, same code on CPU and
CUDA, no host synchronisation.
"""
from __future__ import annotations

import torch

from gpukit.compat.torchmetrics_state import Ranked


def _cut(r: Ranked, k: int | torch.Tensor | None) -> torch.Tensor:
    """(G, W) bool: the first k candidates of each query (all when k is None)."""
    if k is None:
        return r.valid
    pos = torch.arange(r.valid.shape[1], device=r.valid.device)
    bound = k[:, None] if isinstance(k, torch.Tensor) else k
    return r.valid & (pos < bound)


def _hits(r: Ranked, scored: bool) -> torch.Tensor:
    hit = r.target > 0
    return hit & (r.preds > 0) if scored else hit


def _ranks(r: Ranked) -> torch.Tensor:
    return torch.arange(1, r.valid.shape[1] + 1, device=r.valid.device, dtype=torch.float64)


def average_precision(r: Ranked, k: int | None) -> torch.Tensor:
    """AP@k = (1/H) sum_{i<=k, hit_i} (hits in 1..i) / i, H = hits in the top k (0 if H = 0)."""
    hits = (_hits(r, True) & _cut(r, k)).to(torch.float64)
    found = hits.sum(1)
    precision_sum = (hits * torch.cumsum(hits, 1) / _ranks(r)).sum(1)
    return torch.where(found > 0, precision_sum / found.clamp(min=1), torch.zeros_like(found))


def reciprocal_rank(r: Ranked, k: int | None) -> torch.Tensor:
    """RR@k = 1 / rank of the first hit within the top k (0 if none)."""
    hits = _hits(r, True) & _cut(r, k)
    first = torch.argmax(hits.to(torch.uint8), dim=1)
    return torch.where(hits.any(1), 1.0 / (first.to(torch.float64) + 1), torch.zeros(first.shape, dtype=torch.float64, device=first.device))


def precision(r: Ranked, k: int | None, adaptive_k: bool) -> torch.Tensor:
    """P@k = (hits in the top k) / k; k = n when top_k is None or (adaptive_k and top_k > n)."""
    n = r.candidates
    if k is None:
        denominator = n
    elif adaptive_k:
        denominator = torch.where(n < k, n, torch.full_like(n, k))
    else:
        denominator = torch.full_like(n, k)
    found = (_hits(r, True) & _cut(r, denominator)).sum(1)
    return found.to(torch.float64) / denominator.to(torch.float64)


def recall(r: Ranked, k: int | None) -> torch.Tensor:
    """R@k = (hits in the top k) / (targets of the query, scored or not)."""
    found = (_hits(r, True) & _cut(r, k)).sum(1)
    return found.to(torch.float64) / r.target_sum.to(torch.float64)


def hit_rate(r: Ranked, k: int | None) -> torch.Tensor:
    """HitRate@k = 1 if a target is in the top k (any pred), else 0."""
    return (_hits(r, False) & _cut(r, k)).any(1).to(torch.float64)


def r_precision(r: Ranked) -> torch.Tensor:
    """RPrec = (targets in the top R) / R, R = the query's targets."""
    found = (_hits(r, False) & _cut(r, r.target_sum)).sum(1)
    return found.to(torch.float64) / r.target_sum.to(torch.float64)


def fall_out(r: Ranked, k: int | None) -> torch.Tensor:
    """FallOut@k = (non-targets in the top k) / (non-targets of the query)."""
    found = (~_hits(r, False) & _cut(r, k)).sum(1)
    return found.to(torch.float64) / (r.candidates - r.target_sum).to(torch.float64)


def _discount(width: int, k: int | None, device: torch.device) -> torch.Tensor:
    """1 / log2(i + 1) for ranks i <= k, 0 beyond."""
    discount = 1.0 / torch.log2(torch.arange(width, device=device, dtype=torch.float64) + 2.0)
    if k is not None:
        discount[k:] = 0.0
    return discount


def normalized_dcg(r: Ranked, k: int | None) -> torch.Tensor:
    """nDCG@k = DCG@k / IDCG@k (0 where IDCG@k = 0), gain = target (any integer, negative too).

    DCG averages the gain over each group of tied preds (torchmetrics'
    ``_tie_average_dcg``, McSherry & Najork 2008): a rank i in a tied group
    adds discount_i x (mean gain of the group), so DCG does not depend on the
    order within ties. IDCG ranks the query's targets descending.
    """
    groups, width = r.preds.shape
    previous = torch.cat([r.preds[:, :1], r.preds[:, :-1]], dim=1)
    first = torch.arange(width, device=r.preds.device) == 0
    # Padding is its own group each time (gain 0), so it never joins a real group of pred -inf.
    starts = first | (r.preds != previous) | ~r.valid
    label = torch.cumsum(starts.flatten(), 0) - 1
    total = torch.zeros(groups * width, dtype=torch.float64, device=r.preds.device).index_add_(0, label, r.target.flatten().to(torch.float64))
    size = torch.zeros(groups * width, dtype=torch.float64, device=r.preds.device).index_add_(0, label, torch.ones_like(total))
    mean_gain = (total / size.clamp(min=1))[label].view(groups, width)
    dcg = (mean_gain * _discount(width, k, r.preds.device) * r.valid).sum(1)
    assert r.ideal is not None
    idcg = (r.ideal.to(torch.float64) * _discount(r.ideal.shape[1], k, r.ideal.device)).sum(1)
    return torch.where(idcg == 0, torch.zeros_like(dcg), dcg / torch.where(idcg == 0, torch.ones_like(idcg), idcg))


def auroc(r: Ranked, k: int | None, max_fpr: float | None) -> torch.Tensor:
    """AUROC of the top k: ROC over the distinct preds (ties count one half), trapezoids.

    As torchmetrics' ``binary_auroc`` on each query's top k: preds not all in
    [0, 1] go through a float32 sigmoid first (which can make new ties);
    0 where the top k lacks a target or a non-target; ``max_fpr`` < 1: the
    area up to fpr = max_fpr (tpr interpolated) with McClish's correction
    0.5 (1 + (A - m^2/2) / (m - m^2/2)).
    """
    top = _cut(r, k)
    pos = (r.target > 0) & top
    neg = ~(r.target > 0) & top
    positives, negatives = pos.sum(1, keepdim=True).to(torch.float64), neg.sum(1, keepdim=True).to(torch.float64)
    outside = (top & ((r.preds < 0) | (r.preds > 1))).any(1, keepdim=True)
    scores = torch.where(outside, torch.sigmoid(r.preds), r.preds)
    # The last candidate of each run of equal (transformed) preds closes an ROC point.
    following = torch.cat([scores[:, 1:], scores[:, -1:]], dim=1)
    following_top = torch.cat([top[:, 1:], torch.zeros_like(top[:, :1])], dim=1)
    closes = top & ((scores != following) | ~following_top)
    tpr = torch.cumsum(pos, 1).to(torch.float64) / positives.clamp(min=1)
    fpr = torch.cumsum(neg, 1).to(torch.float64) / negatives.clamp(min=1)
    zero = torch.zeros_like(tpr[:, :1])
    # The ROC point before each closing one: running max of closed points, shifted (both are non-decreasing).
    tpr0 = torch.cat([zero, torch.cummax(torch.where(closes, tpr, 0.0), 1).values[:, :-1]], dim=1)
    fpr0 = torch.cat([zero, torch.cummax(torch.where(closes, fpr, 0.0), 1).values[:, :-1]], dim=1)
    if max_fpr is None or max_fpr == 1:
        area = ((fpr - fpr0) * (tpr + tpr0) / 2 * closes).sum(1)
    else:
        end = fpr.clamp(max=max_fpr)
        span = (fpr - fpr0).clamp(min=torch.finfo(torch.float64).tiny)
        tpr_end = torch.where(fpr > max_fpr, tpr0 + (tpr - tpr0) * (end - fpr0) / span, tpr)
        width = (end - fpr0).clamp(min=0)
        area = (width * (tpr_end + tpr0) / 2 * closes).sum(1)
        low = 0.5 * max_fpr**2
        area = 0.5 * (1 + (area - low) / (max_fpr - low))
    both = (positives > 0) & (negatives > 0)
    return torch.where(both.squeeze(1), area, torch.zeros_like(area))


def cumulative_hits(r: Ranked, max_k: int) -> torch.Tensor:
    """(G, max_k) float64: targets among the first j candidates, j = 1..max_k (constant past n)."""
    hits = (_hits(r, False) & r.valid).to(torch.float64)[:, :max_k]
    return torch.cumsum(hits, 1)
