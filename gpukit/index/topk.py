"""Deterministic top-k selection and merging.

Order convention: results are sorted by score descending and, among equal
scores, by index ascending. ``torch.topk`` guarantees neither which of several
tied elements it keeps at the k-th boundary nor their order, so:

* :func:`block_topk` detects rows whose k-th score is tied with an element
  left out and redoes only those rows with a stable full sort;
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
    """
    k = min(k, scores.shape[1])
    values, positions = torch.topk(scores, k, dim=1)
    kth = values[:, -1:]
    # More than k elements >= the k-th value means a tie straddles the cut and
    # topk may have kept any of the tied columns.
    straddling = ((scores >= kth).sum(dim=1) > k).nonzero().squeeze(1)
    if straddling.numel():
        sorted_values, sorted_positions = torch.sort(
            scores[straddling], dim=1, descending=True, stable=True
        )
        values[straddling] = sorted_values[:, :k]
        positions[straddling] = sorted_positions[:, :k]
    return values, positions


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
