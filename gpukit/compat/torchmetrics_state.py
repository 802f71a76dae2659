"""Per-query candidate state of :mod:`gpukit.compat.torchmetrics`: canonical order, top-k buffers, dense rows.

The state of a retrieval metric is a multiset of rows ``(index, pred,
target)`` plus per-query counters ``(index, candidates, sum of targets)``.
Every operation here depends only on that multiset, never on the order or
the split in which rows arrived, so merging states from several updates or
processes (concatenation, then :func:`merge_counters` and
:func:`keep_top`) gives the same result bit for bit.

Canonical order: query index ascending, then pred descending, then target
ascending. Among tied preds the less relevant candidate comes first (the
*pessimistic* tie order); rows equal in all three keys are interchangeable.

Top-k buffer (``keep_top``): per query, every row whose pred is at least the
query's k-th highest pred -- k rows, plus any further rows tied with the
k-th. That is what any value at cutoff k needs, including nDCG's averaging
over tied groups: a group straddling the cutoff is kept whole. Merging two
buffers and cutting again equals cutting the union (the union's k-th pred is
no lower than either part's).
"""
from __future__ import annotations

import dataclasses

import torch

from gpukit.errors import GpukitError

#: Target value of dense padding. Padding is not a candidate: it is masked by ``valid``.
PAD_TARGET = 0


def _span(values: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``values - min`` (non-negative int64) and its bit width."""
    low = values.min()
    shifted = values - low
    return shifted, int(shifted.max()).bit_length()


def lexsort(columns: list[torch.Tensor]) -> torch.Tensor:
    """Permutation sorting rows by ``columns`` (int64, most significant first), ascending.

    Columns are offset to start at 0 and packed, least significant first,
    into as few 62-bit words as fit; each word is one stable sort, least
    significant word first (stable int64 sorts are radix sorts on CPU, which
    is why this beats sorting floats).
    """
    words: list[torch.Tensor] = []
    word, used = None, 0
    for values, bits in (_span(c) for c in reversed(columns)):
        if word is not None and used + bits > 62:
            words.append(word)
            word, used = None, 0
        word = values if word is None else word | (values << used)
        used += bits
    words.append(word)
    order = torch.sort(words[0], stable=True).indices
    for word in words[1:]:
        order = order[torch.sort(word[order], stable=True).indices]
    return order


def pred_rank_key(preds: torch.Tensor) -> torch.Tensor:
    """int64 in [0, 2^32), ascending as float32 ``preds`` descend (not NaN; -0.0 ranks as 0.0).

    The float's bits read as an int32 order non-negative floats; negative ones
    order the other way until their low 31 bits are flipped.
    """
    bits = (preds.to(torch.float32) + 0.0).view(torch.int32).to(torch.int64)
    ascending = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    return (2**31 - 1) - ascending


def canonical_order(index: torch.Tensor, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Permutation sorting rows by (index asc, pred desc, target asc).

    A function of the rows alone: rows equal in all three keys are interchangeable.
    """
    return lexsort([index, pred_rank_key(preds), target])


def segments(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """For rows sorted by index: unique ids (G,), counts (G,), group of each row, position in its group."""
    ids, counts = torch.unique_consecutive(index, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    group = torch.repeat_interleave(torch.arange(ids.numel(), device=index.device), counts)
    position = torch.arange(index.numel(), device=index.device) - starts[group]
    return ids, counts, group, position


def keep_top(index: torch.Tensor, preds: torch.Tensor, target: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The rows of each query's top-k buffer (ties at the k-th pred kept), in canonical order."""
    order = canonical_order(index, preds, target)
    index, preds, target = index[order], preds[order], target[order]
    _, counts, group, _ = segments(index)
    starts = torch.cumsum(counts, 0) - counts
    # k-th highest pred of each query; -inf keeps every row of a query with fewer than k.
    lowest = torch.full(counts.shape, -torch.inf, dtype=preds.dtype, device=preds.device)
    kth = torch.where(counts >= k, preds[(starts + k - 1).clamp(max=max(index.numel() - 1, 0))], lowest)
    keep = preds >= kth[group]
    return index[keep], preds[keep], target[keep]


def keep_largest_targets(index: torch.Tensor, target: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each query's k largest targets (the ideal ranking's top k), sorted by (index asc, target desc)."""
    order = lexsort([index, -target])
    index, target = index[order], target[order]
    _, _, _, position = segments(index)
    keep = position < k
    return index[keep], target[keep]


def query_counters(index: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids, candidates, sum of targets) of the queries in these rows, int64."""
    ids, inverse = torch.unique(index, return_inverse=True)
    count = torch.bincount(inverse, minlength=ids.numel()).to(torch.int64)
    total = torch.zeros(ids.numel(), dtype=torch.int64, device=index.device).index_add_(0, inverse, target.to(torch.int64))
    return ids, count, total


def merge_counters(ids: torch.Tensor, count: torch.Tensor, total: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counters of the same query (several updates or processes) summed; ids ascending."""
    unique, inverse = torch.unique(ids, return_inverse=True)
    zeros = torch.zeros(unique.numel(), dtype=torch.int64, device=ids.device)
    return unique, zeros.index_add(0, inverse, count), zeros.index_add(0, inverse, total)


def dense(group: torch.Tensor, position: torch.Tensor, groups: int, width: int, values: torch.Tensor, pad: float) -> torch.Tensor:
    """(groups, width) matrix with ``values[j]`` at (group[j], position[j]) and ``pad`` elsewhere."""
    out = torch.full((groups, width), pad, dtype=values.dtype, device=values.device)
    out[group, position] = values
    return out


@dataclasses.dataclass(frozen=True)
class Ranked:
    """Every query's candidates (or its top-k buffer) in canonical order, dense.

    ``preds`` (G, W) float32, ``target`` (G, W) int64, ``valid`` (G, W) bool
    (padding is pred -inf, target 0, invalid); ``candidates`` and
    ``target_sum`` (G,) int64 count the query's whole candidate list, not the
    buffer; ``ideal`` (G, Wi) int64 is the query's largest targets, descending,
    padded with 0 (nDCG only; None elsewhere); ``ids`` (G,) the query indexes.
    """

    ids: torch.Tensor
    preds: torch.Tensor
    target: torch.Tensor
    valid: torch.Tensor
    candidates: torch.Tensor
    target_sum: torch.Tensor
    ideal: torch.Tensor | None


def build_ranked(rows: tuple[torch.Tensor, torch.Tensor, torch.Tensor], counters: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None,
                 k: int | None, ideal_rows: tuple[torch.Tensor, torch.Tensor] | None, width: int | None = None) -> Ranked:
    """Merged state -> :class:`Ranked`. ``k``: cut each query to its top-k buffer;
    ``width``: at least this many columns (curves pad to ``max_k``); ``counters``
    None: every row is here (no cutoff), so they are counted from the rows."""
    index, preds, target = rows
    if k is None:
        order = canonical_order(index, preds, target)
        index, preds, target = index[order], preds[order], target[order]
    else:
        index, preds, target = keep_top(index, preds, target, k)
    ids, counts, group, position = segments(index)
    cols = max(int(counts.max()), width or 0)
    groups = ids.numel()
    valid = dense(group, position, groups, cols, torch.ones_like(index, dtype=torch.bool), False)
    if counters is None:  # every row is here, grouped already
        if k is not None:
            raise GpukitError("torchmetrics adapter: a cut state needs its counters")
        counter_ids, candidates = ids, counts.to(torch.int64)
        target_sum = torch.zeros(groups, dtype=torch.int64, device=index.device).index_add_(0, group, target)
    else:
        counter_ids, candidates, target_sum = merge_counters(*counters)
    # Every query with a counter keeps at least one row (a buffer keeps min(k, n) >= 1 rows).
    if counter_ids.shape != ids.shape or not bool((counter_ids == ids).all()):
        raise GpukitError("torchmetrics adapter: the per-query counters do not match the rows (inconsistent merged state)")
    ideal = None
    if ideal_rows is not None:
        ideal_index, ideal_target = keep_largest_targets(*ideal_rows, k if k is not None else 1 << 62)
        _, ideal_counts, ideal_group, ideal_position = segments(ideal_index)
        ideal = dense(ideal_group, ideal_position, groups, max(int(ideal_counts.max()), 1), ideal_target, 0)
    return Ranked(ids=ids, preds=dense(group, position, groups, cols, preds, -torch.inf), target=dense(group, position, groups, cols, target, PAD_TARGET),
                  valid=valid, candidates=candidates, target_sum=target_sum, ideal=ideal)
