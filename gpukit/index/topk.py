"""Deterministic top-k selection and merging.

Order convention: results are sorted by score descending and, among equal
scores, by index ascending. ``torch.topk`` guarantees neither which of several
tied elements it keeps at the k-th boundary nor their order, so:

* :func:`block_topk` keeps the elements strictly above the k-th score (all of
  them are in ``torch.topk``'s result) and fills the remaining slots with the
  tied columns of smallest index, found by a second top-k over a tie key —
  fixed shapes, no full sort, no host synchronisation, whatever the share of
  tied rows (low-precision scores tie across the cut in most rows). On the
  CPU, a block where no row ties across the cut skips the tie fill (one
  host check);
* :func:`sort_by_score_then_index` orders candidates with two stable sorts
  (index ascending, then score descending), which keeps the index order among
  equal scores.

Together they make the final top-k a function of the scores alone, so it is
identical for every corpus chunking.
"""
from __future__ import annotations

import torch

# Sentinel for "no candidate yet": it loses every tie against a real index.
NO_INDEX = torch.iinfo(torch.int64).max


def sort_by_score_then_index(
    scores: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sort each row by (score desc, index asc); returns permuted copies."""
    indices, by_index = torch.sort(indices, dim=1, stable=True)
    scores = scores.gather(1, by_index)
    scores, by_score = torch.sort(scores, dim=1, descending=True, stable=True)
    return scores, indices.gather(1, by_score)


def block_topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``min(k, n)`` per row of a ``(B, n)`` block, ties at the boundary
    resolved toward smaller column positions. Order within the result is
    unspecified (callers merge with :func:`sort_by_score_then_index`).

    Temporaries beyond the block: one (B, n) int32 (int64 past 2^31 columns)
    tie key and one (B, n) bool comparison; the rest is (B, k).
    """
    rows, n = scores.shape
    k = min(k, n)
    if k == n:
        return scores.clone(), torch.arange(n, device=scores.device).expand(rows, n).contiguous()
    if scores.device.type == "cpu" and k >= 1:
        # On the CPU a host check costs nothing: when no row's (k+1)-th score
        # equals its k-th (and none is NaN), the top k of one topk(k + 1) is
        # the whole answer and the three full-width passes of the tie fill
        # below are skipped (measured in docs/benchmarks.md, sentence-transformers).
        values, positions = torch.topk(scores, k + 1, dim=1, sorted=True)
        edge = values[:, k - 1 : k + 1]
        if not bool(((edge[:, 0] == edge[:, 1]) | edge.isnan().any(1)).any()):
            return values[:, :k], positions[:, :k]
        values, positions = values[:, :k], positions[:, :k]  # = topk(k): every score above the k-th is there
    else:
        values, positions = torch.topk(scores, k, dim=1, sorted=True)
    kth = values[:, -1:]
    n_above = (values > kth).sum(1, keepdim=True)
    key_dtype = torch.int32 if n < 2**31 - 1 else torch.int64
    # N - column on tied entries, 0 elsewhere: the largest keys are the tied
    # columns of smallest index.
    columns = torch.arange(n, 0, -1, device=scores.device, dtype=key_dtype)
    tie_key = torch.where(scores == kth, columns, torch.zeros((), dtype=key_dtype, device=scores.device))
    tied = n - torch.topk(tie_key, k, dim=1, sorted=True).values.to(torch.int64)  # ascending columns
    slot = torch.arange(k, device=scores.device)
    from_ties = tied.gather(1, (slot - n_above).clamp(min=0))
    chosen = torch.where(slot < n_above, positions, from_ties)
    return scores.gather(1, chosen), chosen


def merge_topk(
    best_scores: torch.Tensor,
    best_indices: torch.Tensor,
    new_scores: torch.Tensor,
    new_indices: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two candidate sets per row and keep the best ``best_scores.shape[1]``."""
    k = best_scores.shape[1]
    scores, indices = sort_by_score_then_index(
        torch.cat([best_scores, new_scores], dim=1), torch.cat([best_indices, new_indices], dim=1)
    )
    return scores[:, :k], indices[:, :k]


def empty_topk(rows: int, k: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Running-best buffers: score ``-inf`` with the :data:`NO_INDEX` sentinel."""
    scores = torch.full((rows, k), float("-inf"), dtype=torch.float32, device=device)
    indices = torch.full((rows, k), NO_INDEX, dtype=torch.int64, device=device)
    return scores, indices
