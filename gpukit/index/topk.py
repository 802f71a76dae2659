"""Deterministic top-k selection and merging.

Order convention: results are sorted by score descending and, among equal
scores, by index ascending. ``torch.topk`` guarantees neither which of several
tied elements it keeps at the k-th boundary nor their order, so:

* :func:`block_topk` keeps the elements strictly above the k-th score (all of
  them are in ``torch.topk``'s result) and fills the remaining slots with the
  tied columns of smallest index, found by a second top-k over an int16 tie
  key (per group of columns) — fixed shapes, no full sort, no host
  synchronisation, whatever the share of tied rows (low-precision scores tie
  across the cut in most rows). It works in the block's dtype, so a bf16
  matmul result is selected from without an fp32 copy. On the
  CPU, a block where no row ties across the cut skips the tie fill (one
  host check);
* :func:`sort_by_score_then_index` orders candidates with two stable sorts
  (index ascending, then score descending), which keeps the index order among
  equal scores.

Together they make the final top-k a function of the scores alone: for the
same scores it is identical for every corpus chunking. (The scores
themselves can differ in the last bit between block shapes: see
:mod:`gpukit.index.exact`.)
"""
from __future__ import annotations

import torch

from gpukit.float_order import signed_order_bits

# Sentinel for "no candidate yet": it loses every tie against a real index.
NO_INDEX = torch.iinfo(torch.int64).max


def sort_by_score_then_index(
    scores: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sort each row by (score desc, index asc); returns permuted copies.

    On the CPU, rows whose scores already strictly decrease (what
    :func:`block_topk` returns unless scores tie) are copied as they are:
    one comparison pass and a host check instead of two sorts.
    """
    if scores.device.type == "cpu" and scores.shape[1] > 1 and not torch.compiler.is_compiling():
        if bool((scores[:, 1:] < scores[:, :-1]).all()):  # NaN compares False: sorted below
            return scores.clone(), indices.clone()
    indices, by_index = torch.sort(indices, dim=1, stable=True)
    scores = scores.gather(1, by_index)
    scores, by_score = torch.sort(scores, dim=1, descending=True, stable=True)
    return scores, indices.gather(1, by_score)


#: Columns per group of the tie search: a tied column's key within its group
#: (``TIE_GROUP - 1 - offset``) fits int16, half the traffic of an int32 key.
TIE_GROUP = 1 << 15


def block_topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``min(k, n)`` per row of a ``(B, n)`` block, ties at the boundary
    resolved toward smaller column positions. Order within the result is
    unspecified (callers merge with :func:`sort_by_score_then_index`).

    Works in the block's own dtype (a bf16/fp16 matmul result is not upcast:
    the selected values are the same numbers). Temporaries beyond the block:
    one (B, n) bool comparison and one (B, n) int16 tie key; the rest is
    (B, k) or, for wide blocks, (B, n / TIE_GROUP * k).
    """
    rows, n = scores.shape
    k = min(k, n)
    if k == n:
        return scores.clone(), torch.arange(n, device=scores.device).expand(rows, n).contiguous()
    # (Not under torch.compile: a data-dependent branch breaks a full graph.)
    if scores.device.type == "cpu" and k >= 1 and not torch.compiler.is_compiling():
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
    tied = _first_tied_columns(scores == kth, k)  # ascending columns
    slot = torch.arange(k, device=scores.device)
    from_ties = tied.gather(1, (slot - n_above).clamp(min=0))
    chosen = torch.where(slot < n_above, positions, from_ties)
    return scores.gather(1, chosen), chosen


def _first_tied_columns(tied: torch.Tensor, k: int) -> torch.Tensor:
    """(B, k) int64: per row of the (B, n) bool ``tied``, its first ``k`` True
    columns, ascending (entries past a row's count of True are unspecified).

    A top-k over a tie key, ``key(column) = large - column`` where tied and
    below every such key elsewhere, picks the smallest tied columns; keys are
    distinct among tied columns, so no tie is left to torch.topk. The key is
    int16 within groups of :data:`TIE_GROUP` columns (top-k per group, then
    the k smallest of the groups' candidate columns), or int32/int64 over the
    whole row when k is too large for groups to narrow the search.
    """
    rows, n = tied.shape
    device = tied.device
    if n < TIE_GROUP or 8 * k > TIE_GROUP:
        key_dtype = torch.int16 if n < TIE_GROUP else torch.int32 if n < 2**31 - 1 else torch.int64
        columns = torch.arange(n, 0, -1, device=device, dtype=key_dtype)  # n - column, > 0
        key = torch.where(tied, columns, torch.zeros((), dtype=key_dtype, device=device))
        return n - torch.topk(key, k, dim=1, sorted=True).values.to(torch.int64)
    offsets = torch.arange(TIE_GROUP - 1, -1, -1, device=device, dtype=torch.int16)  # TIE_GROUP - 1 - offset
    not_tied = torch.full((), -1, dtype=torch.int16, device=device)
    full = n // TIE_GROUP * TIE_GROUP
    parts = [(0, tied[:, :full].view(rows, -1, TIE_GROUP))]  # n >= TIE_GROUP here
    if full < n:
        parts.append((full, tied[:, None, full:]))
    candidates = []
    for start, part in parts:
        key = torch.where(part, offsets[: part.shape[2]], not_tied)
        best = torch.topk(key, min(k, part.shape[2]), dim=2, sorted=False).values.to(torch.int64)
        group_start = start + TIE_GROUP * torch.arange(part.shape[1], device=device)[:, None]
        # Column of each candidate; non-tied candidates (key -1) sort last.
        column = group_start + (TIE_GROUP - 1) - best
        candidates.append(torch.where(best >= 0, column, n).flatten(1))
    pool = torch.cat(candidates, dim=1)
    return torch.topk(pool, min(k, pool.shape[1]), dim=1, largest=False, sorted=True).values


def merge_topk(
    best_scores: torch.Tensor,
    best_indices: torch.Tensor,
    new_scores: torch.Tensor,
    new_indices: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two candidate sets per row and keep the best ``best_scores.shape[1]``.

    On the CPU, float32 scores with indices
    below 2**31 are merged by one sort of ``(score bits << 31) | index``
    keys (distinct, so no stable sort is needed) instead of two stable sorts.
    """
    k = best_scores.shape[1]
    scores, indices = torch.cat([best_scores, new_scores], dim=1), torch.cat([best_indices, new_indices], dim=1)
    if _packable(scores, indices):
        best = torch.sort((_descending_key(scores) << 31) | indices, dim=1).indices[:, :k]
        return scores.gather(1, best), indices.gather(1, best)
    scores, indices = sort_by_score_then_index(scores, indices)
    return scores[:, :k], indices[:, :k]


def _packable(scores: torch.Tensor, indices: torch.Tensor) -> bool:
    """Whether :func:`merge_topk` may sort packed keys: CPU float32 scores, none
    NaN, indices in [0, 2**31), so that a key fits 63 bits (one host check; not under torch.compile)."""
    if scores.device.type != "cpu" or scores.dtype != torch.float32 or torch.compiler.is_compiling() or not indices.numel():
        return False
    return bool(indices.min() >= 0) and bool(indices.max() < 2**31) and not bool(scores.isnan().any())


def _descending_key(scores: torch.Tensor) -> torch.Tensor:
    """int64 in [0, 2**32) per float32 score, ascending as the scores descend;
    -0.0 and 0.0 share a key (they compare equal, so they tie)."""
    negated = 0.0 - scores  # 0.0 - x: both zeros give +0.0 (gpukit.float_order)
    return signed_order_bits(negated.view(torch.int32)).to(torch.int64) + 2**31


def empty_topk(rows: int, k: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Running-best buffers: score ``-inf`` with the :data:`NO_INDEX` sentinel."""
    scores = torch.full((rows, k), float("-inf"), dtype=torch.float32, device=device)
    indices = torch.full((rows, k), NO_INDEX, dtype=torch.int64, device=device)
    return scores, indices
