"""Quality of approximate search measured against exact search.

Both functions take ``(Q, >=k)`` index matrices (torch tensors or anything
``torch.as_tensor`` accepts) whose rows are ranked result lists, best first,
and use their first ``k`` columns. Negative indices (``-1`` padding for
missing results) never match, and an index repeated within an approximate
row counts once, at its first position.
"""
from __future__ import annotations

from typing import Any

import torch

from gpukit.index.base import IndexUsageError


def _as_index_matrix(data: Any, name: str) -> torch.Tensor:
    tensor = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
    if tensor.ndim != 2 or tensor.is_floating_point():
        shape = tuple(tensor.shape)
        raise IndexUsageError(f"{name} must be a 2-D integer matrix; got {tensor.dtype} {shape}")
    return tensor.to(torch.int64)


def _hits(approx_indices: Any, exact_indices: Any, k: int) -> torch.Tensor:
    """Bool ``(Q, k)``: approximate result ``j`` of query ``i`` is in the exact top-k
    (and is not a padding or repeated entry)."""
    approx = _as_index_matrix(approx_indices, "approx_indices")
    exact = _as_index_matrix(exact_indices, "exact_indices").to(approx.device)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise IndexUsageError(f"k must be a positive int; got {k!r}")
    if approx.shape[0] != exact.shape[0]:
        raise IndexUsageError(f"approx has {approx.shape[0]} queries, exact has {exact.shape[0]}")
    if approx.shape[1] < k or exact.shape[1] < k:
        widths = f"{approx.shape[1]} and {exact.shape[1]}"
        raise IndexUsageError(f"both result lists need >= {k} columns; got {widths}")
    approx, exact = approx[:, :k], exact[:, :k]
    # Membership by binary search in each sorted exact row: O(Q k log k)
    # instead of a (Q, k, k) comparison cube.
    exact_sorted = torch.sort(exact, dim=1).values
    slot = torch.searchsorted(exact_sorted, approx.contiguous()).clamp(max=k - 1)
    member = exact_sorted.gather(1, slot) == approx
    # A repeated approximate entry counts only at its first position: a
    # stable sort keeps the earliest occurrence first among equal values.
    approx_sorted, order = torch.sort(approx, dim=1, stable=True)
    repeat_sorted = torch.zeros_like(member)
    repeat_sorted[:, 1:] = approx_sorted[:, 1:] == approx_sorted[:, :-1]
    repeat = torch.zeros_like(member).scatter_(1, order, repeat_sorted)
    return member & ~repeat & (approx >= 0)


def recall_at_k(approx_indices: Any, exact_indices: Any, k: int) -> float:
    """ANN recall as Big-ANN reports it:
    ``mean_q |approx_top_k(q) ∩ exact_top_k(q)| / k``.
    """
    return _hits(approx_indices, exact_indices, k).sum(dim=1).double().div(k).mean().item()


def ndcg_at_k_loss(approx_indices: Any, exact_indices: Any, k: int) -> float:
    """Relative nDCG@k loss of the approximate lists, ``1 - mean_q nDCG@k(q)``.

    Ground truth for query ``q`` is the exact top-k set, each member with
    gain 1 (binary relevance); everything else has gain 0. Then::

        DCG@k(q)  = sum_{r=1..k} hit(q, r) / log2(r + 1)
        IDCG@k    = sum_{r=1..k} 1 / log2(r + 1)        (k relevant docs)
        nDCG@k(q) = DCG@k(q) / IDCG@k

    where ``hit(q, r)`` is 1 when the approximate result at rank ``r`` is in
    the exact top-k. The loss is 0 when every approximate list holds the
    exact top-k set (in any order) and 1 when none of it; unlike recall it
    weighs misses near the top of the list more.
    """
    hits = _hits(approx_indices, exact_indices, k)
    discounts = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64, device=hits.device))
    ideal = discounts.sum()
    ndcg = (hits.double() * discounts).sum(dim=1) / ideal
    return 1.0 - ndcg.mean().item()
